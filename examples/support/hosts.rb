# frozen_string_literal: true

require_relative "capture"

# Simulated hosts on one machine, for examples and fault tests: each host is a network namespace of its own
# (iproute2's `ip netns`) with a veth pair to the root namespace, and reaches the root namespace (where a server
# listens on #server_address) over TCP through that link only. Its loopback is its own. Every host's root-side end
# carries the one server address (a /32) and a route to the host; the host's end carries the host's address on
# 10.213.N.0/24, the subnet N being the first one no address or route of this machine uses yet. Cutting a host
# takes its root-side end down: traffic stops both ways until it is healed. Nothing is routed beyond the root
# namespace. Needs root and iproute2 (Debian 12's iproute2 package, which bin/setup installs).
#
#   hosts = TestHosts.new(3, prefix: "lmw#{Process.pid}")
#   pid = hosts[0].spawn({ "PGCONNECT_TIMEOUT" => "2" }, "ruby", "worker.rb", out: $stdout)
#   hosts[0].cut!    # the host's link down: its connections hang, new ones time out
#   hosts[0].heal!
#   hosts.destroy    # namespaces and veths gone (also at exit, in the process that made them)
class TestHosts
  include Enumerable

  # The longest network interface name (IFNAMSIZ, 16 bytes with the terminating NUL).
  IFNAMSIZ = 15
  # The private /16 the subnets are taken from: 10.213.N.0/24, N from 1 to 254.
  NETWORK = "10.213"
  SUBNETS = 1..254
  # Serializes the choice of a subnet between processes making hosts at once.
  LOCK = "/tmp/lease_machines-test-hosts.lock"

  class Error < StandardError; end

  # One simulated host: a namespace, its address, and the root-side end of its link.
  class Host
    # The namespace's name, the host's IP address, the root-side veth's name.
    attr_reader :namespace, :address, :interface

    def initialize(hosts, namespace:, address:, interface:)
      @hosts = hosts
      @namespace = namespace
      @address = address
      @interface = interface
    end

    # Starts +argv+ inside the host's namespace (`ip netns exec`, which execs it: the pid is the command's), with
    # +env+ added to the environment and Process.spawn's +options+. Returns the pid.
    def spawn(env, *argv, **options)
      Process.spawn(env, TestHosts.ip, "netns", "exec", namespace, *argv, **options)
    end

    # The host's link down: nothing passes either way.
    def cut!
      @hosts.ip!("link", "set", interface, "down")
      self
    end

    # The link up again, and the root namespace's route to the host back (the kernel drops it with the link).
    def heal!
      @hosts.ip!("link", "set", interface, "up")
      @hosts.ip!("route", "replace", "#{address}/32", "dev", interface, "src", @hosts.server_address)
      self
    end

    def to_s = "#{namespace} (#{address})"
  end

  # Whether this process can make hosts: root, iproute2, and a namespace made and deleted for real once.
  def self.available? = unavailable_reason.nil?

  # Why it cannot (a sentence), or nil when it can.
  def self.unavailable_reason
    return @unavailable_reason if defined?(@unavailable_reason)

    @unavailable_reason = probe
  end

  # iproute2's ip, or nil.
  def self.ip
    return @ip if defined?(@ip)

    @ip = [*ENV.fetch("PATH", "").split(File::PATH_SEPARATOR), "/usr/sbin", "/sbin"]
          .map { File.join(_1, "ip") }.find { File.executable?(_1) && !File.directory?(_1) }
  end

  def self.probe
    return "network namespaces need root (this process runs as uid #{Process.uid})" unless Process.uid.zero?
    return "no ip command (Debian 12's iproute2 package, which bin/setup installs)" unless ip

    name = "lmprobe#{Process.pid}"
    out, status = Capture.capture2e(ip, "netns", "add", name)
    return "ip netns add failed: #{out.strip.gsub(/\s*\n\s*/, "; ")}" unless status.success?

    Capture.capture2e(ip, "netns", "delete", name)
    nil
  end
  private_class_method :probe

  # The root namespace's address on every host's link: where a server for the hosts listens.
  attr_reader :server_address

  # Makes +count+ hosts (1 to 253), named after +prefix+ (letters and digits): namespaces PREFIX-0, PREFIX-1, ...,
  # root-side veths PREFIXv0, PREFIXv1, ... (IFNAMSIZ bounds the prefix). Raises Error when hosts cannot be made here
  # (TestHosts.unavailable_reason) or a step fails; what was made by then is removed.
  def initialize(count, prefix: "lmw#{Process.pid}")
    raise ArgumentError, "count #{count.inspect}: a whole number from 1 to 253" unless (1..253).cover?(count)
    raise ArgumentError, "prefix #{prefix.inspect}: letters and digits only" unless prefix.match?(/\A[a-z0-9]+\z/i)
    if "#{prefix}v#{count - 1}".size > IFNAMSIZ
      raise ArgumentError, "prefix #{prefix.inspect}: too long for #{count} interface names of #{IFNAMSIZ} characters"
    end

    reason = self.class.unavailable_reason
    raise Error, reason if reason

    @prefix = prefix
    @hosts = []
    @owner = Process.pid
    at_exit { destroy if Process.pid == @owner }
    File.open(LOCK, File::RDWR | File::CREAT, 0o644) do |lock|
      lock.flock(File::LOCK_EX)
      subnet = free_subnet
      @server_address = "#{NETWORK}.#{subnet}.1"
      count.times { |index| make_host(index, "#{NETWORK}.#{subnet}.#{index + 2}") }
    end
  rescue StandardError
    destroy
    raise
  end

  def [](index) = @hosts.fetch(index)
  def each(&) = @hosts.each(&)
  def size = @hosts.size

  # The hosts' network, as a CIDR (for a server's access rules).
  def network = "#{server_address.delete_suffix(".1")}.0/24"

  # Deletes every namespace and veth made; again, it does nothing.
  def destroy
    (@hosts || []).reverse_each do |host|
      ip("netns", "delete", host.namespace)
      # Gone with its namespace, unless a process still runs in it.
      ip("link", "delete", host.interface)
    end
    @hosts = []
    self
  end

  def to_s = "TestHosts(#{@hosts.map(&:to_s).join(", ")})"

  # Runs ip with +args+; raises Error with its output when it fails.
  def ip!(*args)
    out, status = Capture.capture2e(self.class.ip, *args)
    raise Error, "ip #{args.join(" ")} failed: #{out.strip}" unless status.success?

    out
  end

  private

  def ip(*args) = Capture.capture2e(self.class.ip, *args).last.success?

  # The first subnet 10.213.N.0/24 that no address or route of the root namespace mentions.
  def free_subnet
    used = ip!("-4", "-o", "address", "show") + ip!("-4", "route", "show", "table", "all")
    SUBNETS.find { !used.include?("#{NETWORK}.#{_1}.") } or raise Error, "every subnet #{NETWORK}.N.0/24 is in use"
  end

  def make_host(index, address)
    namespace = "#{@prefix}-#{index}"
    interface = "#{@prefix}v#{index}"
    peer = "#{@prefix}p#{index}"
    ip!("netns", "add", namespace)
    host = Host.new(self, namespace: namespace, address: address, interface: interface)
    @hosts << host # destroy removes it from here on, even if a step below fails
    ip!("link", "add", interface, "type", "veth", "peer", "name", peer)
    ip!("link", "set", peer, "netns", namespace)
    ip!("address", "add", "#{server_address}/32", "dev", interface)
    ip!("-n", namespace, "link", "set", peer, "name", "eth0")
    ip!("-n", namespace, "address", "add", "#{address}/24", "dev", "eth0")
    ip!("-n", namespace, "link", "set", "eth0", "up")
    ip!("-n", namespace, "link", "set", "lo", "up")
    host.heal!
  end
end
