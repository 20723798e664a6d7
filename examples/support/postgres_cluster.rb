# frozen_string_literal: true

require "etc"
require "fileutils"
require "rbconfig"
require "socket"
require "uri"
require_relative "capture"
require_relative "throwaway_server"

# A throwaway PostgreSQL cluster for tests and examples: Debian 12's own server (the postgresql package,
# /usr/lib/postgresql/15/bin), a data directory of its own, trust authentication for the superuser `postgres`, a
# Unix socket in its directory and TCP on 127.0.0.1 at a free port. The server's output goes to server.log in its
# directory. As root, the server runs as the system user `postgres` (PostgreSQL refuses to run as root), which is
# given the directory. The process that started a cluster stops it at exit (a forked child never does).
#
#   cluster = PostgresCluster.new.start(dir: "tmp/postgres-#{Process.pid}")
#   PG.connect(cluster.url).exec("SELECT 1")
#   cluster.restart   # `pg_ctl stop -m immediate` (a crash, for the server), then a start: same port, same data
#   cluster.destroy   # stopped, its directory removed
#   standby = PostgresCluster.new.start_standby(dir: "tmp/standby", primary: cluster)   # streaming, asynchronous
#   standby.promote   # pg_ctl promote: a primary on a new timeline
class PostgresCluster
  include ThrowawayServer

  # The server's programs: Debian's and Ubuntu's layout, the newest major version installed (15 on Debian 12).
  BIN = Dir["/usr/lib/postgresql/*/bin"].max_by { File.basename(File.dirname(_1)).to_i } || "/usr/lib/postgresql/15/bin"
  # The database superuser, and the system user the server runs as under root.
  USER = "postgres"
  # The longest path a Unix socket can have (sun_path holds 108 bytes with the terminating NUL).
  SOCKET_PATH_MAX = 107
  # How long a start or a stop may take.
  TIMEOUT = 60
  STOP_MODES = %i[smart fast immediate].freeze

  class Error < StandardError; end

  # Whether this process can start a cluster and talk to it with the pg gem.
  def self.available? = unavailable_reason.nil?

  # Why it cannot (a sentence), or nil when it can.
  def self.unavailable_reason
    return @unavailable_reason if defined?(@unavailable_reason)

    @unavailable_reason = server_unavailable_reason || pg_unavailable_reason
  end

  # Why no server can be started here, or nil (what start needs; the pg gem is the caller's business).
  def self.server_unavailable_reason
    cpu = RbConfig::CONFIG["host_cpu"]
    return "the PostgreSQL server is used on x86_64 only (this is #{cpu})" unless cpu == "x86_64"

    missing = %w[initdb pg_ctl postgres pg_isready].reject { File.executable?(File.join(BIN, _1)) }
    unless missing.empty?
      return "no PostgreSQL server in #{BIN} (#{missing.join(", ")} missing): Debian 12's postgresql package, " \
             "which bin/setup installs"
    end
    return unless Process.uid.zero?

    Etc.getpwnam(USER)
    nil
  rescue ArgumentError
    "running as root, and there is no #{USER} user to run the server as"
  end

  # Why the pg gem does not load in this Ruby, or nil.
  def self.pg_unavailable_reason
    require "pg"
    nil
  rescue LoadError => e
    minor = RUBY_VERSION[/\A\d+\.\d+/]
    return "the pg gem does not load (#{e.message}); bin/setup installs it" if minor == "3.3"

    "the pg gem exists here only for CRuby 3.3 (Debian's binary ruby-pg); this is Ruby #{RUBY_VERSION}"
  end

  # The directory (data/, server.log and the socket) and the TCP port, once started.
  attr_reader :dir, :port

  # Makes a cluster in DIR (created; the project's tmp/ is the place for it) and starts it: initdb, the settings
  # (appended to its postgresql.conf, so that a restart keeps them), pg_ctl start. +listen+: more addresses to
  # listen on than 127.0.0.1 (that exist on this machine), +trust+: networks (CIDR) whose TCP clients are trusted
  # too (TestHosts#network), +env+: the server's environment beyond this process's (LD_PRELOAD of libfaketime, for a
  # server whose clock a test steps; kept for #restart). Returns self. Raises Error, with the tail of the server's
  # log, when the server does not start.
  def start(dir:, listen: [], trust: [], env: {})
    raise Error, "#{self}: started already, in #{@dir}" if @dir
    reason = self.class.server_unavailable_reason
    raise Error, reason if reason

    @dir = File.expand_path(dir)
    @env = env
    socket = File.join(@dir, ".s.PGSQL.65535")
    raise Error, "#{@dir}: too long for the server's Unix socket (#{socket}, over #{SOCKET_PATH_MAX} bytes)" \
      if socket.bytesize > SOCKET_PATH_MAX

    FileUtils.mkdir_p(@dir)
    give_to_server_user(@dir)
    @port = free_port
    run!("initdb", "--pgdata", data, "--auth=trust", "--username", USER, "--encoding", "UTF8", "--locale", "C",
         "--no-sync", "--no-instructions")
    File.open(File.join(data, "postgresql.conf"), "a") { _1.puts(settings(listen)) }
    File.open(File.join(data, "pg_hba.conf"), "a") { |hba| trust.each { hba.puts("host all all #{_1} trust") } }
    stop_at_exit
    launch
    self
  end

  # Makes a streaming standby of +primary+ in DIR and starts it: pg_basebackup of the primary's data with its
  # recovery settings (standby.signal and primary_conninfo: asynchronous, PostgreSQL's default), then the settings of
  # #start on a port of its own. Returns self, once it answers (a hot standby: read-only queries only).
  def start_standby(dir:, primary:)
    raise Error, "#{self}: started already, in #{@dir}" if @dir

    @dir = File.expand_path(dir)
    FileUtils.mkdir_p(@dir)
    give_to_server_user(@dir)
    @port = free_port
    run!("pg_basebackup", "--pgdata", data, "--host", "127.0.0.1", "--port", primary.port.to_s, "--username", USER,
         "--write-recovery-conf", "--checkpoint=fast", "--wal-method=stream", "--no-sync")
    File.open(File.join(data, "postgresql.conf"), "a") { _1.puts(settings([])) }
    stop_at_exit
    launch
    self
  end

  # Promotes a standby (pg_ctl promote, waiting until it takes writes): it leaves recovery on a new timeline.
  def promote
    run!("pg_ctl", "promote", "--pgdata", data, "--wait", "--timeout", TIMEOUT.to_s, "--silent")
    self
  end

  # The cluster an earlier start left in DIR (a process killed before its at_exit ran leaves its server running), to
  # stop or destroy. Returns self.
  def attach(dir:)
    raise Error, "#{self}: started already, in #{@dir}" if @dir

    @dir = File.expand_path(dir)
    conf = File.join(data, "postgresql.conf")
    @port = File.file?(conf) ? File.read(conf)[/^port = (\d+)$/, 1]&.to_i : nil
    self
  end

  # postgresql://... over TCP, as the superuser, to the database postgres.
  def url = "postgresql://#{USER}@127.0.0.1:#{port}/postgres"

  # The same over the Unix socket in the cluster's directory.
  def socket_url = "postgresql://#{USER}@/postgres?host=#{URI.encode_www_form_component(dir)}&port=#{port}"

  # Whether the server runs (pg_ctl status).
  def running?
    return false unless @dir && File.directory?(data)

    _, status = capture("pg_ctl", "status", "--pgdata", data)
    status.success?
  end

  # The server's process id (postmaster.pid's first line), or nil when it does not run.
  def pid
    return unless running?

    Integer(File.foreach(File.join(data, "postmaster.pid")).first, exception: false)
  end

  # Stops the server, if it runs: :fast (sessions ended, a clean shut-down), :immediate (no shut-down at all: the
  # next start recovers from the WAL, as after a crash) or :smart (waits for the sessions to end).
  def stop(mode: :fast)
    raise ArgumentError, "stop mode #{mode.inspect}: one of #{STOP_MODES.inspect}" unless STOP_MODES.include?(mode)
    return self unless running?

    run!("pg_ctl", "stop", "--pgdata", data, "--mode", mode.to_s, "--wait", "--timeout", TIMEOUT.to_s, "--silent")
    self
  end

  def to_s = "PostgresCluster(#{@dir ? "#{@dir}, port #{@port}" : "not started"})"

  private

  def data = File.join(@dir, "data")
  def log = File.join(@dir, "server.log")
  def root? = Process.uid.zero?

  def settings(listen)
    <<~CONF
      # PostgresCluster's (examples/support/postgres_cluster.rb)
      listen_addresses = '#{["127.0.0.1", *listen].join(", ")}'
      port = #{port}
      unix_socket_directories = '#{dir}'
      fsync = on
      max_connections = 100
    CONF
  end

  # Starts the server on the cluster's data directory and waits until it answers on TCP; on failure, raises with
  # the log's tail.
  #
  # The port, free when it was chosen, may have been taken since (the kernel hands the same range to other
  # programs' outgoing connections): a server that cannot bind it is started again on another, up to 5 times.
  def launch
    5.times do |attempt|
      logged = File.file?(log) ? File.size(log) : 0
      _, status = capture("pg_ctl", "start", "--pgdata", data, "--log", log, "--wait", "--timeout", TIMEOUT.to_s,
                          "--silent", env: @env || {})
      break if status.success?
      raise Error, "#{self}: the server did not start:\n#{log_tail}" if attempt == 4 || !port_taken?(logged)

      @port = free_port
      File.open(File.join(data, "postgresql.conf"), "a") { _1.puts("port = #{port} # the last one was taken") }
    end

    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + TIMEOUT
    until capture("pg_isready", "--host", "127.0.0.1", "--port", port.to_s, "--quiet").last.success?
      raise Error, "#{self}: the server does not answer on TCP:\n#{log_tail}" \
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  end

  # Whether the server's last start (its log from byte +from+ on) failed because its port was in use.
  def port_taken?(from) = File.file?(log) && File.binread(log, nil, from).include?("Address already in use")

  # Under root the server user must own DIR, and reach it (every directory above it must let it through).
  def give_to_server_user(dir)
    return unless root?

    user = Etc.getpwnam(USER)
    FileUtils.chown_R(user.uid, user.gid, dir)
    _, status = Capture.capture2e("runuser", "-u", USER, "--", "test", "-w", dir)
    raise Error, "#{dir}: the #{USER} user cannot write there (a directory above it keeps it out)" \
      unless status.success?
  end

  # Runs one of the server's tools (as the server user under root) in the cluster's directory, with +env+ beyond this
  # process's environment (env(1): runuser keeps what it is given), for the tool and what it starts.
  def capture(tool, *args, env: {})
    command = [*(env.empty? ? [] : ["env", *env.map { "#{_1}=#{_2}" }]), File.join(BIN, tool), *args]
    command = ["runuser", "-u", USER, "--", *command] if root?
    Capture.capture2e(*command, chdir: @dir)
  end

  def run!(tool, *args)
    out, status = capture(tool, *args)
    raise Error, "#{self}: #{tool} #{args.first} failed:\n#{out}#{log_tail}" unless status.success?

    out
  end
end
