# frozen_string_literal: true

module LeaseMachines
  class Web
    # The rules an action's request must pass before it changes anything (the router has already refused any method
    # but POST, and the authorize hook has seen the request): actions must be on, and the request must come from the
    # dashboard's own pages. Browsers say where a request comes from in Sec-Fetch-Site (same-origin, or none for one
    # the user typed) and in Origin (scheme://host:port, which must be this request's own): a form on another site
    # posting here is refused whatever cookies it carries. Either header, when absent, is not held against the
    # request (older browsers, curl), since the authorize hook still stands in front of it.
    class ActionGuard
      SAME_SITE = %w[same-origin none].freeze
      DEFAULT_PORTS = { "http" => "80", "https" => "443" }.freeze

      def initialize(actions)
        @actions = actions
      end

      # Raises Forbidden, saying why, unless +request+ (a Rack::Request) may act.
      def check!(request)
        unless @actions
          raise Forbidden, "actions are off: this dashboard is read-only (LeaseMachines::Web.new(actions: true, " \
                           "authorize: ...) offers revoke)"
        end

        site = request.get_header("HTTP_SEC_FETCH_SITE")
        if site && !SAME_SITE.include?(site)
          raise Forbidden, "cross-site request refused: Sec-Fetch-Site is #{LeaseMachines.shown(site)}, not " \
                           "same-origin"
        end

        origin = request.get_header("HTTP_ORIGIN")
        own = request.base_url
        return if origin.nil? || ActionGuard.origin(origin) == ActionGuard.origin(own)

        raise Forbidden, "cross-origin request refused: Origin #{LeaseMachines.shown(origin)} is not this " \
                         "dashboard's (#{own})"
      end

      # +url+'s scheme://host:port, lowercase and with the scheme's default port written out, to compare two origins;
      # nil for anything else (the "null" origin of a sandboxed frame or a file: page).
      def self.origin(url)
        match = %r{\A([a-z][a-z0-9+.-]*)://([^/?#@\s]+?)(?::(\d+))?/?\z}i.match(url) or return nil
        scheme = match[1].downcase
        "#{scheme}://#{match[2].downcase}:#{match[3] || DEFAULT_PORTS[scheme]}"
      end
    end
  end
end
