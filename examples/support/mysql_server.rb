# frozen_string_literal: true

require "etc"
require "fileutils"
require "rbconfig"
require "securerandom"
require "socket"
require_relative "capture"
require_relative "throwaway_server"

# A throwaway MariaDB server for tests and examples: Debian 12's own (the mariadb-server package, 10.11), a data
# directory of its own made by mariadb-install-db, root without a password, a Unix socket in its directory and TCP on
# 127.0.0.1 at a free port, and durable commits (innodb_flush_log_at_trx_commit=1, sync_binlog=1, the binary log on).
# Nothing of the machine's own configuration is read (--no-defaults). The server's errors go to server.log in its
# directory. The process that started a server stops it at exit (a forked child never does).
#
#   server = MySQLServer.new.start(dir: "tmp/mysql-#{Process.pid}")
#   Mysql2::Client.new(**server.options).query("SELECT 1")
#   server.url         # mysql2://root@127.0.0.1:PORT/lease_machines
#   server.restart     # SIGKILL (a crash, for the server), then a start: same port, same data
#   server.destroy     # stopped, its directory removed
class MySQLServer
  include ThrowawayServer

  # The server's programs, as Debian 12 installs them.
  MARIADBD = "/usr/sbin/mariadbd"
  INSTALL_DB = "/usr/bin/mariadb-install-db"
  # The database the suite's stores live in (created by #start).
  DATABASE = "lease_machines"
  # How long a start or a stop may take, seconds.
  TIMEOUT = 60
  SOCKET_PATH_MAX = 107

  class Error < StandardError; end

  # Whether this process can start a server and talk to it with the mysql2 gem.
  def self.available? = unavailable_reason.nil?

  # Why it cannot (a sentence), or nil when it can.
  def self.unavailable_reason
    return @unavailable_reason if defined?(@unavailable_reason)

    @unavailable_reason = server_unavailable_reason || mysql2_unavailable_reason
  end

  # Why no server can be started here, or nil.
  def self.server_unavailable_reason
    cpu = RbConfig::CONFIG["host_cpu"]
    return "the MariaDB server is used on x86_64 only (this is #{cpu})" unless cpu == "x86_64"

    missing = [MARIADBD, INSTALL_DB].reject { File.executable?(_1) }
    return if missing.empty?

    "no MariaDB server (#{missing.join(", ")} missing): Debian 12's mariadb-server package, which bin/setup installs"
  end

  # Why the mysql2 gem does not load in this Ruby, or nil.
  def self.mysql2_unavailable_reason
    require "mysql2"
    nil
  rescue LoadError => e
    "the mysql2 gem does not load (#{e.message}); bin/setup installs it"
  end

  # The directory (data/, server.log and the socket) and the TCP port, once started.
  attr_reader :dir, :port

  # Makes a server in DIR (created) and starts it; +settings+ are more server options ("name=value"). Returns self.
  # Raises Error, with the tail of the server's log, when it does not start.
  def start(dir:, settings: [])
    raise Error, "#{self}: started already, in #{@dir}" if @dir
    reason = self.class.server_unavailable_reason
    raise Error, reason if reason

    @dir = File.expand_path(dir)
    @settings = settings
    raise Error, "#{@dir}: too long for the server's Unix socket" if socket.bytesize > SOCKET_PATH_MAX

    FileUtils.mkdir_p(@dir)
    @port = free_port
    out, status = Capture.capture2e(INSTALL_DB, "--no-defaults", "--datadir=#{data}", "--user=#{user}",
                                    "--auth-root-authentication-method=normal", "--skip-test-db",
                                    "--skip-name-resolve")
    raise Error, "#{self}: mariadb-install-db failed:\n#{out}" unless status.success?

    stop_at_exit
    launch
    client = connect(database: nil)
    begin
      client.query("CREATE DATABASE IF NOT EXISTS #{DATABASE}")
    ensure
      client.close
    end
    self
  end

  # The server an earlier start left in DIR (a process killed before its at_exit ran leaves it running), to stop or
  # destroy. Returns self.
  def attach(dir:)
    raise Error, "#{self}: started already, in #{@dir}" if @dir

    @dir = File.expand_path(dir)
    self
  end

  # mysql2://root@127.0.0.1:PORT/DATABASE, over TCP.
  def url(database = DATABASE) = "mysql2://root@127.0.0.1:#{port}/#{database}"

  # The same over the Unix socket in the server's directory.
  def socket_url(database = DATABASE) = "mysql2://root@localhost/#{database}?socket=#{socket}"

  # Mysql2::Client.new's options for the server's database (or +database+).
  def options(database: DATABASE) = { host: "127.0.0.1", port: port, username: "root", database: database }

  # A new Mysql2::Client on the server.
  def connect(database: DATABASE, **more)
    require "mysql2"
    Mysql2::Client.new(**options(database: database), **more)
  end

  # A database of its own on the server (created), for one test: its URL.
  def fresh_database_url(prefix = "t")
    name = "#{prefix}_#{Process.pid}_#{SecureRandom.hex(4)}"
    client = connect(database: nil)
    begin
      client.query("CREATE DATABASE #{name}")
    ensure
      client.close
    end
    url(name)
  end

  # The server's process id, or nil when it does not run.
  def pid
    return unless @dir && File.file?(pid_file)

    pid = Integer(File.read(pid_file).strip, exception: false)
    pid if pid && alive?(pid)
  end

  def running? = !pid.nil?

  # Stops the server: :fast (SIGTERM: a clean shut-down) or :immediate (SIGKILL: a crash; the next start recovers
  # from InnoDB's redo log).
  def stop(mode: :fast)
    raise ArgumentError, "stop mode #{mode.inspect}: :fast or :immediate" unless %i[fast immediate].include?(mode)

    server = pid or return self
    Process.kill(mode == :fast ? :TERM : :KILL, server)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + TIMEOUT
    while alive?(server)
      raise Error, "#{self}: the server did not stop" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
    self
  end

  def to_s = "MySQLServer(#{@dir ? "#{@dir}, port #{@port}" : "not started"})"

  private

  def data = File.join(@dir, "data")
  def socket = File.join(@dir, "mysqld.sock")
  def pid_file = File.join(@dir, "mysqld.pid")
  def log = File.join(@dir, "server.log")
  def user = Process.uid.zero? ? "root" : Etc.getpwuid(Process.uid).name

  def alive?(pid)
    Process.kill(0, pid)
    !File.read("/proc/#{pid}/stat").split[2].to_s.start_with?("Z")
  rescue Errno::ESRCH
    false
  rescue Errno::ENOENT, Errno::EPERM
    true
  end

  def arguments
    ["--no-defaults", "--datadir=#{data}", "--socket=#{socket}", "--port=#{port}", "--bind-address=127.0.0.1",
     "--pid-file=#{pid_file}", "--log-error=#{log}", "--user=#{user}", "--skip-name-resolve",
     "--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1", "--log-bin=#{File.join(data, "binlog")}",
     "--server-id=1", "--innodb-buffer-pool-size=64M", "--max-connections=200",
     "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin", *@settings.map { "--#{_1}" }]
  end

  # Starts mariadbd in a process group of its own and waits until it answers on TCP; on failure, raises with the
  # log's tail.
  def launch
    File.delete(pid_file) if File.exist?(pid_file)
    server = Process.spawn(MARIADBD, *arguments, in: File::NULL, out: File::NULL, err: File::NULL, pgroup: true)
    Process.detach(server)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + TIMEOUT
    loop do
      break if answers?
      raise Error, "#{self}: the server did not start:\n#{log_tail}" unless alive?(server)
      raise Error, "#{self}: the server does not answer:\n#{log_tail}" \
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  end

  def answers?
    TCPSocket.new("127.0.0.1", port).close
    File.file?(pid_file)
  rescue SystemCallError
    false
  end
end
