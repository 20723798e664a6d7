# frozen_string_literal: true

require "fileutils"
require "socket"

# What the throwaway database servers of tests and examples share (PostgresCluster, MySQLServer): a free port, a stop
# when the process that started the server exits, and the tail of the server's log for an error. The including class
# has #dir, #log (the log file's path), #launch (starts the server on its data) and #stop(mode:).
module ThrowawayServer
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

  # A port that was free a moment ago: the kernel's pick for a socket bound to port 0.
  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

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
