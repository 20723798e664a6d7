# frozen_string_literal: true

require "fileutils"
require "socket"
require_relative "throwaway_server"

# A throwaway redis-server for tests and benchmarks: Debian 12's (the redis-server package, which bin/setup installs)
# on a free port of 127.0.0.1, its files (redis.log, any AOF or RDB) in a directory of its own. With no +args+ it keeps
# nothing at all (--save "" --appendonly no); +args+ are more of redis-server's own options, after those (so
# "--appendonly", "yes" wins). The process that started a server stops it at exit (a forked child never does).
# Needs the redis-client gem for #client and for the wait until the server answers.
#
#   server = RedisServer.new("tmp/redis-#{Process.pid}").start
#   server.url        # redis://127.0.0.1:PORT/0 (with the password of a --requirepass among args)
#   server.restart    # SIGKILL (a crash), then a start on the same port and directory: only what it persisted is back
#   server.stop       # SIGTERM, and waits for it
class RedisServer
  BINARY = "redis-server"
  # How long a start may take.
  TIMEOUT = 10

  class Error < StandardError; end

  attr_reader :dir, :port, :version

  def initialize(dir, args: [])
    @dir = File.expand_path(dir)
    @args = args.map(&:to_s)
  end

  # Starts the server on a free port (the same one again after #restart). Returns self. Raises Error when there is
  # no redis-server, or it does not answer within TIMEOUT (with the tail of its log).
  def start
    require "redis-client"
    binary = ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).map { File.join(_1, BINARY) }
                .find { File.executable?(_1) }
    raise Error, "no #{BINARY} on PATH (Debian 12's redis-server package, which bin/setup installs)" unless binary

    FileUtils.mkdir_p(@dir)
    @port ||= self.class.free_port
    @log = File.join(@dir, "redis.log")
    @pid = Process.spawn(binary, "--port", @port.to_s, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", @dir, "--logfile", @log, "--daemonize", "no", *@args, in: File::NULL,
                                                                                       out: File::NULL, err: File::NULL)
    stop_at_exit
    @version = wait_until_ready
    self
  end

  # The server's URL, with the password of a --requirepass among its args.
  def url
    password = @args[@args.index("--requirepass") + 1] if @args.include?("--requirepass")
    "redis://#{password ? ":#{password}@" : ""}127.0.0.1:#{@port}/0"
  end

  def client = RedisClient.new(url: url)

  def running? = !@pid.nil?

  # Stops the server with +signal+ (TERM: a clean shut-down; KILL: a crash) and waits for it.
  def stop(signal: "TERM")
    return self unless @pid

    Process.kill(signal, @pid)
    Process.wait(@pid)
    @pid = nil
    self
  rescue Errno::ESRCH, Errno::ECHILD
    @pid = nil
    self
  end

  # A crash (SIGKILL) and a start on the same port and directory.
  def restart
    stop(signal: "KILL")
    start
  end

  # Stopped, its directory removed.
  def destroy
    stop
    FileUtils.rm_rf(@dir)
    self
  end

  # A port free now on 127.0.0.1 (ThrowawayServer.free_port): redis-server takes no port 0.
  def self.free_port = ThrowawayServer.free_port

  private

  def wait_until_ready
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + TIMEOUT
    begin
      connection = client
      connection.call("INFO", "server")[/redis_version:(\S+)/, 1]
    rescue RedisClient::ConnectionError, RedisClient::CommandError
      log = File.file?(@log) ? File.read(@log).lines.last(5).join : ""
      raise Error, "#{BINARY} did not answer on port #{@port}: #{log}" \
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
      retry
    ensure
      connection&.close
    end
  end

  def stop_at_exit
    return if @stop_at_exit

    @stop_at_exit = true
    owner = Process.pid
    at_exit { stop if Process.pid == owner }
  end
end
