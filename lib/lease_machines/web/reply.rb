# frozen_string_literal: true

module LeaseMachines
  class Web
    # One response of the dashboard, as a Rack triple with the headers every answer carries: a Content-Security-Policy
    # whose nonce (fresh for each response, from SecureRandom) is the only way a style or script runs, nosniff,
    # Referrer-Policy same-origin and Cache-Control no-store (lease states go stale within seconds). A HEAD request
    # gets the headers of its GET and no body.
    class Reply
      HTML = "text/html; charset=utf-8"
      TEXT = "text/plain; charset=utf-8"
      JSON_TYPE = "application/json; charset=utf-8"
      SVG = "image/svg+xml; charset=utf-8"
      # The Prometheus text exposition format, version 0.0.4.
      PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"

      # The nonce of this response's <style> and <script> tags (24 base64 characters).
      attr_reader :nonce

      def initialize(head: false)
        @nonce = SecureRandom.base64(18)
        @head = head
      end

      # The policy: nothing but the nonce's style and script, images from the app or data: URLs, fetch() to the app,
      # forms posted to the app, and never in a frame.
      def policy
        "default-src 'none'; script-src 'nonce-#{@nonce}'; style-src 'nonce-#{@nonce}'; img-src 'self' data:; " \
          "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
      end

      def html(body, status: 200) = respond(status, HTML, body)
      def text(body, status: 200, headers: {}) = respond(status, TEXT, body, headers)
      def svg(body) = respond(200, SVG, body)
      def prometheus(body) = respond(200, PROMETHEUS, body)

      # +data+ as JSON, with "</" and the line separators escaped (script_safe), should it ever be read as markup.
      def json(data) = respond(200, JSON_TYPE, JSON.generate(data, script_safe: true))

      # 303 See Other to +location+ (a path of the app): the answer to a POST, followed with a GET.
      def redirect(location) = respond(303, TEXT, "See #{location}\n", { "location" => location })

      # +error+ (an HttpError) as its status and a plain message, one line, no backtrace.
      def error(error)
        reason = Rack::Utils::HTTP_STATUS_CODES.fetch(error.status)
        text("#{error.status} #{reason}: #{error.message}\n", status: error.status, headers: error.headers)
      end

      private

      def respond(status, type, body, extra = {})
        headers = {
          "content-type" => type,
          "content-length" => body.bytesize.to_s,
          "content-security-policy" => policy,
          "x-content-type-options" => "nosniff",
          "referrer-policy" => "same-origin",
          "cache-control" => "no-store"
        }.merge(extra)
        [status, headers, @head ? [] : [body]]
      end
    end
  end
end
