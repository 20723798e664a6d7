# frozen_string_literal: true

module LeaseMachines
  class Web
    # A request the dashboard answers with an error status and a plain message (never a backtrace): raised by the
    # parameter checks, the router and the action guard, rendered by Reply#error. +status+ is the HTTP status.
    class HttpError < Error
      def status = 500

      # The response headers the status calls for beyond the usual ones (Allow for a 405).
      def headers = {}
    end

    # A parameter that is missing, malformed, out of range or not UTF-8 (400).
    class BadRequest < HttpError
      def status = 400
    end

    # A request the dashboard refuses: actions off, cross-site, or not authorized (403).
    class Forbidden < HttpError
      def status = 403
    end

    # No page at that path (404).
    class NotFound < HttpError
      def status = 404
    end

    # A method the route does not take (405); +allow+ lists the ones it does, for the Allow header.
    class MethodNotAllowed < HttpError
      attr_reader :allow

      def initialize(method, allow)
        @allow = allow.freeze
        super("#{method} is not allowed here (allowed: #{allow.join(", ")})")
      end

      def status = 405
      def headers = { "allow" => allow.join(", ") }
    end

    # No store to read: the dashboard was mounted without one (500), with a message saying how to configure it.
    class NotConfigured < HttpError
      def status = 500
    end

    # An exception the dashboard did not expect (a fault of its own, of the authorize hook or of the store factory):
    # 500, naming only the exception's class. Its message and backtrace go to the server's log (Web#call writes them
    # to rack.errors), never to the page: whoever sent the request reads that (and a hook that raised admitted no one).
    class Failed < HttpError
      def initialize(error)
        super("the dashboard failed (#{error.class}); see the server's log")
      end

      def status = 500
    end

    # The store could not answer (a LeaseMachines::StoreError: locked, unreachable, ...): 503 with its message.
    class Unavailable < HttpError
      def status = 503
    end
  end
end
