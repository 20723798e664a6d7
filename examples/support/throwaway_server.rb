# frozen_string_literal: true

require "fileutils"
require "socket"

# What the throwaway database servers of tests and examples share (PostgresCluster, MySQLServer): a free port, a stop
# when the process that started the server exits, and the tail of the server's log for an error. The including class
# has #dir, #log (the log file's path), #launch (starts the server on its data) and #stop(mode:).
module ThrowawayServer
  # Where Linux keeps the range of ports it hands to outgoing connections.
  EPHEMERAL_PORTS = "/proc/sys/net/ipv4/ip_local_port_range"
  # The lowest port #free_port picks.
  LOWEST_PORT = 10_000

  # A port of 127.0.0.1 that is free now, chosen at random below the range the kernel hands to outgoing connections
  # (ip_local_port_range), so that no other program's connection can take it between this choice and the server's
  # bind (the kernel's own pick, port 0, comes from that very range); the kernel's pick where there is no room below
  # it (or no such file).
  def self.free_port
    low = File.file?(EPHEMERAL_PORTS) ? Integer(File.read(EPHEMERAL_PORTS).split.first, 10) : 0
    if low > LOWEST_PORT + 1000
      50.times do
        port = rand(LOWEST_PORT...low)
        return port if free?(port)
      end
    end
    Addrinfo.tcp("127.0.0.1", 0).bind { |socket| socket.local_address.ip_port }
  end

  # Whether +port+ of 127.0.0.1 can be bound now.
  def self.free?(port)
    Addrinfo.tcp("127.0.0.1", port).bind { true }
  rescue Errno::EADDRINUSE, Errno::EACCES
    false
  end
  # Stops the server (immediately by default: a crash, for fault tests) and starts it again on the same port and
  # data. Returns self.
  def restart(mode: :immediate)
    raise self.class::Error, "#{self}: not started" unless @dir

    stop(mode: mode)
    launch
    self
  end

  # Stops the server and removes its directory; it can then be started again, anywhere. Returns self.
  def destroy
    return self unless @dir

    stop(mode: :fast)
    FileUtils.rm_rf(@dir)
    @dir = @port = nil
    self
  end

  private

  def free_port = ThrowawayServer.free_port

  # Stops the server when the process that started it exits (not in a forked child, which has the hook too).
  def stop_at_exit
    return if @stop_at_exit

    @stop_at_exit = true
    owner = Process.pid
    at_exit do
      stop(mode: :fast) if Process.pid == owner && @dir
    rescue self.class::Error => e
      warn "#{self}: #{e.message}"
    end
  end

  def log_tail(lines = 30)
    return "" unless @dir && File.file?(log)

    "--- the last lines of #{log}:\n#{File.readlines(log).last(lines).join}"
  end
end
