# frozen_string_literal: true

module LeaseMachines
  class Web
    # Serves a dashboard with WEBrick (through rackup's handler; the webrick and rackup gems, which the gem does not
    # depend on), for `lease_machines web`: in the foreground until INT or TERM, which shut it down cleanly.
    module Server
      # Serves +app+ on +bind+ (an address) and +port+ (0 to 65535; 0 has the kernel pick a free one); yields the
      # URL it listens on ("http://127.0.0.1:9292/") once it does, and returns after a shutdown. WEBrick's own
      # messages go to +log+ (warnings and errors only; no access log). Raises LoadError without webrick or rackup,
      # SystemCallError when the address cannot be bound.
      def self.run(app, bind:, port:, log:)
        require "rackup/handler/webrick"
        logger = WEBrick::Log.new(log, WEBrick::Log::WARN)
        Rackup::Handler::WEBrick.run(app, Host: bind, Port: port, AccessLog: [], Logger: logger) do |server|
          previous = %w[INT TERM].to_h { |signal| [signal, trap(signal) { server.shutdown }] }
          restore = -> { previous.each { |signal, handler| trap(signal, handler || "DEFAULT") } }
          server.config[:StopCallback] = restore
          yield url(bind, server.config[:Port])
        end
      end

      # The URL of +bind+ and +port+ (an IPv6 address in brackets).
      def self.url(bind, port)
        host = bind.include?(":") ? "[#{bind}]" : bind
        "http://#{host}:#{port}/"
      end
    end
  end
end
