# frozen_string_literal: true

require "fileutils"
require "open3"
require "socket"
require_relative "../examples/support/hosts"

module Bench
  module Stores
    # Why a server or a link could not be had: the rows that need it are skipped, with this message.
    class Unavailable < StandardError; end

    # A throwaway redis-server (Debian 12's, which bin/setup installs) on a free port of 127.0.0.1, with no
    # persistence at all (--save "" --appendonly no), its files in its own directory; stopped by #stop.
    class RedisServer
      BINARY = "redis-server"

      attr_reader :port, :version

      def initialize(dir)
        @dir = dir
      end

      def start
        binary = ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).map { File.join(_1, BINARY) }
                    .find { File.executable?(_1) }
        unless binary
          raise Unavailable, "no #{BINARY} on PATH (Debian 12's redis-server package, which bin/setup installs)"
        end

        FileUtils.mkdir_p(@dir)
        @port = Stores.free_port
        @log = File.join(@dir, "redis.log")
        @pid = Process.spawn(binary, "--port", @port.to_s, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", @dir, "--logfile", @log, "--daemonize", "no", in: File::NULL, out: File::NULL,
                             err: File::NULL)
        @version = wait_until_ready
        self
      end

      def client = RedisClient.config(host: "127.0.0.1", port: @port).new_client

      def stop
        return unless @pid

        Process.kill("TERM", @pid)
        Process.wait(@pid)
        @pid = nil
      rescue Errno::ESRCH, Errno::ECHILD
        @pid = nil
      end

      private

      def wait_until_ready
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
        begin
          client.then { |c| c.call("INFO", "server")[/redis_version:(\S+)/, 1].tap { c.close } }
        rescue RedisClient::ConnectionError
          log = File.file?(@log) ? File.read(@log).lines.last(5).join : ""
          raise Unavailable, "redis-server did not answer on port #{@port}: #{log}" \
            if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

          sleep 0.05
          retry
        end
      end
    end

    # A simulated host (examples/support/hosts.rb: a network namespace with a veth pair to this one) with netem's
    # delay on both ends of its link: a connection opened inside the namespace (#inside) to #server_address crosses
    # the pair, and every round trip pays twice the delay. The server stays in this namespace and listens on
    # #server_address; the benchmark opens its client connections with its thread moved into the namespace
    # (setns(2)), so that they are its own, in the same process as every other row. Needs root, iproute2 and the
    # kernel's netem qdisc (sch_netem).
    class DelayedLink
      CLONE_NEWNET = 0x40000000

      attr_reader :delay_ms

      # +delay_ms+ is each end's delay; 0 makes the link without netem.
      def initialize(delay_ms:)
        @delay_ms = delay_ms
      end

      # Makes the host and its delays; raises Unavailable (with nothing left behind) when it cannot.
      def open
        reason = TestHosts.unavailable_reason
        raise Unavailable, reason if reason

        @hosts = TestHosts.new(1, prefix: "lmb#{Process.pid}")
        @host = @hosts[0]
        if @delay_ms.positive?
          delay = "#{(@delay_ms * 1000).round}us"
          netem "dev", @host.interface, "root", "netem", "delay", delay
          netem "-n", @host.namespace, "dev", "eth0", "root", "netem", "delay", delay
        end
        self
      rescue TestHosts::Error => e
        close
        raise Unavailable, e.message
      rescue Unavailable
        close
        raise
      end

      def server_address = @hosts.server_address
      def client_address = @host.address
      # What the server trusts: the host's network.
      def network = @hosts.network

      # Runs the block with this thread in the namespace: the sockets it opens belong there (and stay there after).
      def inside
        require "fiddle"
        setns = Fiddle::Function.new(Fiddle::Handle::DEFAULT["setns"], [Fiddle::TYPE_INT, Fiddle::TYPE_INT],
                                     Fiddle::TYPE_INT)
        File.open("/proc/thread-self/ns/net") do |home|
          File.open("/run/netns/#{@host.namespace}") do |namespace|
            raise Unavailable, "setns into #{@host.namespace} failed" \
              unless setns.call(namespace.fileno, CLONE_NEWNET).zero?

            begin
              yield
            ensure
              abort "bench/stores.rb: could not return to the root network namespace" \
                unless setns.call(home.fileno, CLONE_NEWNET).zero?
            end
          end
        end
      end

      # Removes the namespace, which takes the pair (and its netem) with it.
      def close = @hosts&.destroy

      private

      # tc qdisc add, with +args+ (an -n NAMESPACE first, then the device and the qdisc).
      def netem(*args)
        namespace = args.first == "-n" ? args.shift(2) : []
        out, status = Open3.capture2e("tc", *namespace, "qdisc", "add", *args)
        raise Unavailable, "tc could not add netem's delay (#{out.strip})" unless status.success?
      end
    end

    module_function

    # A port that was free a moment ago on 127.0.0.1 (the kernel's pick for a socket bound to port 0, closed again).
    def free_port = Addrinfo.tcp("127.0.0.1", 0).bind { |socket| socket.local_address.ip_port }
  end
end
