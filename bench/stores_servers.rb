# frozen_string_literal: true

require "fileutils"
require "open3"
require "socket"
require_relative "../examples/support/hosts"
require_relative "../examples/support/redis_server"

module Bench
  module Stores
    # Why a server or a link could not be had: the rows that need it are skipped, with this message.
    class Unavailable < StandardError; end

    # The throwaway redis-server of examples/support/redis_server.rb (no persistence at all: --save "" --appendonly
    # no), whose failure to start skips the rows that need it.
    class RedisServer < ::RedisServer
      def start
        super
      rescue ::RedisServer::Error => e
        raise Unavailable, e.message
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
  end
end
