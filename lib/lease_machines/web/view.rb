# frozen_string_literal: true

module LeaseMachines
  class Web
    # What the pages of one response render with: the app's mount point (+base+, the request's SCRIPT_NAME, so that
    # links work at /leases as at /), the response's nonce, the dashboard's settings, and the helpers every page
    # writes values with. Every value goes through #h (HTML and SVG text and attributes alike); links are built by
    # #url, whose parameters are percent-encoded, so any UTF-8 resource name round-trips.
    class View
      attr_reader :base, :nonce, :poll_every, :actions

      def initialize(base:, nonce:, poll_every:, actions:)
        @base = base
        @nonce = nonce
        @poll_every = poll_every
        @actions = actions
      end

      # +value+ (anything; nil is empty) as escaped text: & < > " ' become entities.
      def h(value) = Rack::Utils.escape_html(value.to_s)

      # An element: <name attr="value"...>content</name>, or <name .../> without +content+ (markup, inserted as
      # is). Every attribute value is escaped; an attribute whose value is nil is left out.
      def tag(name, attributes, content = nil)
        return "<#{name}#{attributes(attributes)}/>" if content.nil?

        "#{start_tag(name, attributes)}#{content}</#{name}>"
      end

      # The start tag of an element whose content follows (#tag's attributes).
      def start_tag(name, attributes) = "<#{name}#{attributes(attributes)}>"

      # The app's +path+ (from its root, "/resource") with +params+ (nil values left out) as a query string.
      def url(path, params = {})
        query = Rack::Utils.build_query(params.compact.transform_values(&:to_s))
        query.empty? ? "#{@base}#{path}" : "#{@base}#{path}?#{query}"
      end

      # +at+ (Float seconds since the Unix epoch, or nil) as a UTC time to the millisecond; "—" for nil.
      def time(at) = View.time(at)

      def self.time(at)
        return "—" if at.nil?

        Time.at(at).utc.strftime("%Y-%m-%d %H:%M:%S.%L UTC")
      rescue RangeError
        format("%.3f s", at)
      end

      # +seconds+ (Float, or nil) as a duration for people, as the page's script writes it while counting down:
      # to the tenth of a second below an hour ("12.3 s", "4 min 05.2 s"), then "2 h 03 min 05 s", "3 d 04 h 05 min";
      # "—" for nil. Rounded to the tenth once, so a time that rounds up to a whole minute is written as one.
      def self.duration(seconds)
        return "—" if seconds.nil?

        tenths = (seconds * 10).round
        return format("%d.%d s", tenths / 10, tenths % 10) if tenths < 600
        return format("%d min %02d.%d s", tenths / 600, tenths % 600 / 10, tenths % 10) if tenths < 36_000

        whole = tenths / 10
        return format("%d h %02d min %02d s", whole / 3600, whole % 3600 / 60, whole % 60) if whole < 86_400

        format("%d d %02d h %02d min", whole / 86_400, whole % 86_400 / 3600, whole % 3600 / 60)
      end

      # +pairs+ (a Hash) as attributes, each value escaped, the nil ones left out.
      def attributes(pairs) = pairs.filter_map { |key, value| %( #{key}="#{h(value)}") unless value.nil? }.join

      # +text+ with any password masked (Redaction), escaped.
      def masked(text) = h(Redaction.mask(text))
    end
  end
end
