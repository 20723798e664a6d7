# frozen_string_literal: true

require "test_helper"
require "lease_machines/cli"
require "json"
require "open3"
require "pty"
require "socket"
require "stringio"
require "support/redis_support"

# exe/lease_machines as a user runs it: a separate process, its output and its exit status.
class CLITest < Minitest::Test
  include LeaseMachines::TestSupport
  include RedisStoreSupport

  # This checkout's executable, with its lib/ first on the load path; or, testing an installed gem, the gem's.
  COMMAND = if INSTALLED
              [RbConfig.ruby, File.join(Gem::Specification.find_by_name("lease_machines").bin_dir, "lease_machines")]
            else
              [RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), File.expand_path("../../exe/lease_machines", __dir__)]
            end

  def setup
    plain_suite_only!("runs the executable in child processes")
    spawns_ruby!
  end

  def lease_machines(*args, stdin: "", env: {})
    Open3.capture3(env, *COMMAND, *args, stdin_data: stdin)
  end

  # The command with its stdout (and, given +err+, its stderr) as given to Process.spawn (a path, :close, an IO);
  # returns what it wrote to stderr (unless +err+ is given) and its exit status.
  def lease_machines_writing_to(out, *args, err: nil)
    reader, writer = IO.pipe unless err
    pid = Process.spawn(*COMMAND, *args, in: File::NULL, out:, err: err || writer)
    writer&.close
    message = reader&.read
    Process.wait(pid)
    [message, $?]
  ensure
    reader&.close
  end

  # A locale that is not UTF-8: LANG=C or nothing at all, as under cron, systemd or a bare container.
  NOT_UTF8_LOCALES = [{ "LANG" => "C", "LC_ALL" => nil, "LC_CTYPE" => nil },
                      { "LANG" => nil, "LC_ALL" => nil, "LC_CTYPE" => nil }].freeze

  def test_simulate_prints_a_summary_and_succeeds
    out, err, status = lease_machines("simulate", "--cycles", "3000", "--seed", "5")
    assert_equal 0, status.exitstatus, err
    assert_equal "", err
    assert_match(/\ASimulated 3,000 cycles of contention: 4 workers, 2 resources, TTL 1\.0 s, seed 5, /, out)
    assert_match(/^  violations +0 /, out)
    assert_match(/^SAFE: every write with a stale token was refused/, out)
  end

  def test_the_failover_preset_matches_the_library
    out, err, status = lease_machines("simulate", "--preset", "failover", "--json")
    assert_equal 0, status.exitstatus, err
    assert_equal LeaseMachines.simulate(LeaseMachines::SimulationConfig.failover_preset).to_json, out.chomp
    document = JSON.parse(out)
    assert_equal [50_000, 50_000, 0], document.values_at("cycles", "stale_writes_rejected", "violations")
  end

  def test_options_override_the_preset_in_any_order
    out, = lease_machines("simulate", "--cycles", "1000", "--preset", "failover", "--json")
    assert_equal({ "cycles" => 1000, "scenario" => "failover", "workers" => 2 },
                 JSON.parse(out)["config"].slice("cycles", "scenario", "workers"))
  end

  def test_violations_exit_1
    out, _err, status = lease_machines("simulate", "--cycles", "2000", "--without-fence")
    assert_equal 1, status.exitstatus
    assert_match(/fence DISABLED/, out)
    assert_match(/^UNSAFE: [1-9][\d,]* violations/, out)
  end

  def test_bad_options_are_named_and_exit_2
    {
      %w[simulate --cycles many] => "invalid argument: --cycles many",
      %w[simulate --cycles -3] => "invalid argument: --cycles -3 (must be 0 or more)",
      %w[simulate --ttl 0] => "invalid argument: --ttl 0.0 (must be finite and at least 1e-6)",
      %w[simulate --workers 1] => "workers must be between 2 and 1024, not 1",
      %w[simulate --scenario chaos] => "invalid argument: --scenario chaos",
      %w[simulate --preset nightly] => "invalid argument: --preset nightly",
      %w[simulate --frobnicate] => "invalid option: --frobnicate",
      %w[simulate extra] => "unexpected argument \"extra\"",
      %w[audit] => "no FILE given",
      %w[audit --database /nonexistent/leases.sqlite3] => "no lease store at /nonexistent/leases.sqlite3: no such file",
      %w[audit --database leases.sqlite3 events.json] => "--database or a FILE, not both (got \"events.json\")",
      %w[web] => "lease_machines web: --database is required: the lease store to show",
      %w[web --database /nonexistent/leases.sqlite3] => "no lease store at /nonexistent/leases.sqlite3: no such file",
      %w[web --port 70000] => "invalid argument: --port 70000 (must be 0 to 65535)",
      %w[web --port http] => "invalid argument: --port http",
      %w[web --database x extra] => "unexpected argument \"extra\"",
      %w[web --actions --database x] => "lease_machines web: --actions: the command line serves the dashboard " \
                                        "read-only; revoke needs LeaseMachines::Web.new(actions: true, authorize: " \
                                        "...) in your own application",
      %w[help web extra] => "help takes one COMMAND (simulate, audit, web), got \"web\" \"extra\"",
      %w[explode] => "unknown command \"explode\" (valid: simulate, audit, web)"
    }.each do |args, message|
      _out, err, status = lease_machines(*args)
      assert_equal 2, status.exitstatus, args.join(" ")
      assert_includes err, message, args.join(" ")
    end
  end

  def test_help_for_each_command
    out, _err, status = lease_machines("--help")
    assert_equal 0, status.exitstatus
    assert_match(/^  simulate +Run the deterministic failover simulation/, out)
    out, _err, status = lease_machines("simulate", "--help")
    assert_equal 0, status.exitstatus
    %w[--preset --cycles --workers --ttl --seed --json --without-fence].each { assert_includes out, _1 }
    out, _err, status = lease_machines("audit", "--help")
    assert_equal 0, status.exitstatus
    assert_match(/^Usage: lease_machines audit \[options\] FILE\n       lease_machines audit \[options\] --database DB$/, out)
    out, _err, status = lease_machines("help", "web")
    assert_equal 0, status.exitstatus
    assert_match(/^Usage: lease_machines web --database DB \[options\]$/, out)
    assert_match(/Read-only: the command line never\noffers revoke/, out)
    %w[--database --bind --port --actions].each { assert_includes out, _1 }
    out, = lease_machines("--help")
    assert_match(/^  audit --database DB +Check a lease store's event log/, out)
    assert_match(%r{^  web --database DB +Serve the lease dashboard of a lease store, read-only, on http://127\.0\.0\.1:9292/$}, out)
  end

  # A lease store with worker 7's night in its event log (a grant, a renewal, a takeover after expiry, a write
  # refused), in a file of a scratch directory; returns its path.
  def lease_store
    require "lease_machines/store"
    path = File.join(scratch_dir("lease-cli-store"), "leases.sqlite3")
    store = LeaseMachines::Store.new(path)
    store.acquire(resource: "r", owner: 7, ttl: 10.0, now: 100.0)
    store.renew(resource: "r", owner: 7, token: 1, ttl: 10.0, now: 105.0)
    store.acquire(resource: "r", owner: 9, ttl: 10.0, now: 120.0)
    assert_raises(LeaseMachines::Fenced) { store.fenced(resource: "r", token: 1, now: 121.0) { nil } }
    store.close
    path
  end

  def test_audit_checks_a_lease_stores_event_log
    requires_sqlite3!
    path = lease_store
    out, err, status = lease_machines("audit", "--database", path)
    assert_equal [0, ""], [status.exitstatus, err]
    assert_equal "#{path}: 3 events checked, no findings\n", out
    database = SQLite3::Database.new(path)
    renewed = database.get_first_value("SELECT id FROM lease_machines_events WHERE kind = 'renewed'")
    database.execute("UPDATE lease_machines_events SET expires_at = 1.0 WHERE id = ?", [renewed])
    database.close
    out, _err, status = lease_machines("audit", "--database", path)
    assert_equal 1, status.exitstatus
    assert_match(/\A#{Regexp.escape(path)}: event #{renewed} \(resource "r"\): renewal_shortened: .+\n/, out)
    assert_match(/^#{Regexp.escape(path)}: 3 events checked, 1 finding\n\z/, out)
    out, _err, status = lease_machines("audit", "--json", "--database", path)
    assert_equal 1, status.exitstatus
    assert_equal [:renewal_shortened], LeaseMachines::AuditReport.from_json(out).findings.map(&:code)
  end

  # The dashboard served as a user runs it: the URL on stdout, the pages read-only, INT stops it with exit 0.
  def test_web_serves_the_dashboard_read_only_until_interrupted
    requires_sqlite3!
    begin
      require "rackup/handler/webrick"
    rescue LoadError => e
      skip "lease_machines web needs the rack, rackup and webrick gems (the Gemfile's :web group): #{e.message}"
    end
    require "net/http"
    path = lease_store
    Open3.popen3(*COMMAND, "web", "--database", path, "--port", "0") do |stdin, stdout, stderr, thread|
      stdin.close
      line = stdout.gets
      assert_match(%r{\Alease_machines web: serving #{Regexp.escape(path)} on http://127\.0\.0\.1:\d+/ \(read-only; Ctrl-C stops\)\n\z}, line)
      uri = URI(line[%r{http://\S+}])
      Net::HTTP.start(uri.host, uri.port) do |http|
        page = http.get("/")
        assert_equal ["200", "text/html; charset=utf-8"], [page.code, page["content-type"]]
        assert_includes page.body, %(<td data-field="resource"><a href="/resource?name=r&amp;slot=0">r</a></td>)
        refute_includes page.body, %(<form class="revoke")
        assert_match(/^lease_machines_events\{kind="write_refused"\} 1$/, http.get("/metrics").body)
        revoke = http.post("/revoke", "resource=r&slot=0", "Content-Type" => "application/x-www-form-urlencoded")
        assert_equal "403", revoke.code
        assert_match(/actions are off/, revoke.body)
      end
      Process.kill("INT", thread.pid)
      assert_equal 0, thread.value.exitstatus
      assert_equal "", stdout.read
      assert_equal "", stderr.read
    end
  end

  def test_a_redis_store_that_is_not_running_is_named_without_its_password
    port = TCPServer.open("127.0.0.1", 0).then { |server| server.addr[1].tap { server.close } }
    %w[audit web].each do |command|
      out, err, status = lease_machines(command, "--database", "redis://worker:hunter2@127.0.0.1:#{port}/3")
      assert_equal [2, ""], [status.exitstatus, out], command
      assert_match(%r{\Alease_machines #{command}: cannot open the lease store at redis://127\.0\.0\.1:#{port}/3: [^\n]+\n\z},
                   err, command)
      refute_includes err, "hunter2"
    end
  end

  def test_audit_reads_a_redis_store_named_without_its_password
    server = own_redis("--requirepass", "hunter2-secret")
    require "lease_machines/store"
    store = LeaseMachines::Store.new(server.url)
    store.acquire(resource: "r", owner: 7, ttl: 10.0, now: 100.0)
    store.renew(resource: "r", owner: 7, token: 1, ttl: 10.0, now: 105.0)
    store.acquire(resource: "r", owner: 9, ttl: 10.0, now: 120.0)
    store.close
    out, err, status = lease_machines("audit", "--database", server.url)
    assert_equal [0, ""], [status.exitstatus, err]
    assert_equal "redis://127.0.0.1:#{server.port}: 3 events checked, no findings\n", out
  end

  # An event log file of two grants on +resource+, one after the other's expiry; +reverse+ writes it backwards.
  def event_log(resource, reverse: false)
    table = LeaseMachines::Table.new
    table.acquire(resource:, owner: 1, now: 0.0, ttl: 5.0)
    table.acquire(resource:, owner: 2, now: 6.0, ttl: 5.0)
    events = reverse ? table.events.reverse : table.events
    File.join(scratch_dir("lease-cli"), "events.json").tap { File.write(_1, LeaseMachines.events_to_json(events)) }
  end

  def test_audit_passes_a_real_event_log
    path = event_log("nightly-report")
    out, err, status = lease_machines("audit", path)
    assert_equal 0, status.exitstatus, err
    assert_equal "#{path}: 2 events checked, no findings\n", out
    out, _err, status = lease_machines("audit", "-", stdin: File.read(path))
    assert_equal 0, status.exitstatus
    assert_equal "-: 2 events checked, no findings\n", out
  end

  def test_audit_reports_findings_and_exits_1
    path = event_log("r", reverse: true)
    out, _err, status = lease_machines("audit", path)
    assert_equal 1, status.exitstatus
    assert_includes out, "#{path}: event 1 (resource \"r\"): token_not_rising: "
    assert_match(/: 2 events checked, 4 findings$/, out)
    out, _err, status = lease_machines("audit", "--json", path)
    assert_equal 1, status.exitstatus
    assert_equal 4, LeaseMachines::AuditReport.from_json(out).findings.size
  end

  def test_a_utf8_event_log_is_read_whatever_the_locale
    path = event_log("café-report")
    NOT_UTF8_LOCALES.each do |env|
      out, err, status = lease_machines("audit", path, env:)
      assert_equal [0, ""], [status.exitstatus, err], env.inspect
      assert_equal "#{path}: 2 events checked, no findings\n", out
      out, err, status = lease_machines("audit", "-", stdin: File.read(path), env:)
      assert_equal [0, "", "-: 2 events checked, no findings\n"], [status.exitstatus, err, out], env.inspect
      out, _err, status = lease_machines("audit", event_log("café", reverse: true), env:)
      assert_equal 1, status.exitstatus, env.inspect
      assert_match(/: event 1 \(resource "caf(é|\\u00E9)"\): token_not_rising: /, out.force_encoding(Encoding::UTF_8))
    end
  end

  # A document that is not an event log, or one the audit cannot take, is one line on stderr and exit status 2.
  def test_a_log_with_an_empty_resource_is_bad_input_not_a_crash
    path = event_log("r")
    File.write(path, File.read(path).gsub('"resource":"r"', '"resource":""'))
    out, err, status = lease_machines("audit", path)
    assert_equal [2, ""], [status.exitstatus, out]
    assert_equal "lease_machines audit: #{path}: not an event log: invalid document: events[0].resource must not be empty\n", err
  end

  def test_usage_errors_always_exit_2
    [%w[simulate --version], %w[audit -v], %w[simulate --*-completion-bash=--c], %w[--help extra],
     %w[--version extra], %w[help audit extra], %w[audit --json], %w[audit a b], %w[--frobnicate], [], %w[web -v],
     %w[web --database]].each do |args|
      out, err, status = lease_machines(*args)
      assert_equal [2, ""], [status.exitstatus, out], args.join(" ")
      assert_match(/\Alease_machines( \w+)?: /, err, args.join(" "))
    end
    out, _err, status = lease_machines("help", "audit")
    assert_equal 0, status.exitstatus
    assert_match(/^Usage: lease_machines audit \[options\] FILE/, out)
    # With stderr closed the message is lost, never the status.
    [%w[explode], %w[audit /nonexistent/events.json], %w[simulate --cycles many]].each do |args|
      _, status = lease_machines_writing_to(File::NULL, *args, err: :close)
      assert_equal 2, status.exitstatus, args.join(" ")
    end
  end

  def test_bad_input_is_one_line_without_a_backtrace
    dir = scratch_dir("lease-cli")
    { "empty.json" => "", "binary.json" => "\xff\xfe{}".b, "event.json" => '{"format":1,"events":[{"oops":1}]}' }
      .each do |name, text|
        path = File.join(dir, name)
        File.binwrite(path, text)
        out, err, status = lease_machines("audit", path)
        assert_equal [2, ""], [status.exitstatus, out], name
        assert_match(/\Alease_machines audit: #{Regexp.escape(path)}: not an event log: [^\n]+\n\z/, err, name)
      end
    _out, err, status = lease_machines("audit", dir)
    assert_equal [2, "lease_machines audit: cannot read #{dir}: Is a directory\n"], [status.exitstatus, err]
  end

  def test_a_report_that_cannot_be_written_is_a_message_and_exit_2
    path = event_log("r")
    if File.exist?("/dev/full")
      err, status = lease_machines_writing_to("/dev/full", "audit", path)
      assert_equal [2, "lease_machines audit: cannot write the report: No space left on device\n"], [status.exitstatus, err]
      err, status = lease_machines_writing_to("/dev/full", "--help")
      assert_equal [2, "lease_machines: cannot write the report: No space left on device\n"], [status.exitstatus, err]
    end
    err, status = lease_machines_writing_to(:close, "audit", path)
    assert_equal [2, "lease_machines audit: cannot write the report: Broken pipe\n"], [status.exitstatus, err]
    # A reader that stopped reading (`| head -c1`): its end of the pipe is closed before the report is written.
    reader, writer = IO.pipe
    reader.close
    err, status = lease_machines_writing_to(writer, "simulate", "--cycles", "300", "--json")
    writer.close
    assert_equal [2, "lease_machines simulate: cannot write the report: Broken pipe\n"], [status.exitstatus, err]
  end

  def test_audit_refuses_unreadable_input_with_exit_2
    _out, err, status = lease_machines("audit", "/nonexistent/events.json")
    assert_equal 2, status.exitstatus
    assert_includes err, "cannot read /nonexistent/events.json: No such file or directory"
    _out, err, status = lease_machines("audit", "-", stdin: '{"format":1,"events":[{"oops":1}]}')
    assert_equal 2, status.exitstatus
    assert_match(/-: not an event log: /, err)
  end

  # Every `bin/lease_machines ...` line of the README's command examples runs (here through this suite's command:
  # the checkout's or the installed gem's), from the checkout's root, with the exit status its comment ends with
  # ("... exit status 1"; 0 otherwise), as script/readme-check runs them in a fresh clone.
  def test_the_readme_command_examples_run
    root = File.expand_path("../..", __dir__)
    examples = File.read(File.join(root, "README.md")).scan(%r{^bin/(lease_machines [^#\n]*?)\s+# (.*)$})
    assert_operator examples.size, :>=, 5
    examples.each do |command, comment|
      expected = comment[/exit status (\d+)\z/, 1].to_i
      out, err, status = Dir.chdir(root) { lease_machines(*command.split.drop(1)) }
      assert_equal expected, status.exitstatus, "#{command}\n#{out}#{err}"
    end
  end

  def test_a_long_run_on_a_terminal_shows_a_progress_bar
    output = +""
    PTY.spawn(*COMMAND, "simulate", "--cycles", "30000", "--progress") do |reader, _writer, pid|
      reader.each_char { output << _1 }
    rescue Errno::EIO
      # The child closed the terminal.
    ensure
      Process.wait(pid)
    end
    assert_equal 0, $?.exitstatus, output
    assert_match(%r{Simulating \|=+\| 30000/30000 cycles}, output)
    assert_match(/^SAFE: /, output)
  end
end

# LeaseMachines::CLI in this process, with StringIO output: under RBS's runtime checks this also holds the CLI's
# signatures to the code.
class CLIInProcessTest < Minitest::Test
  def run_cli(*args)
    out = StringIO.new
    err = StringIO.new
    [LeaseMachines::CLI.new(out:, err:).run(args), out.string, err.string]
  end

  # A lease store in each form a user can give its password in (each password has "hunter2" in it), on a port of
  # this machine that nothing listens on, as [database, the start of the message naming it].
  def databases_with_passwords
    port = TCPServer.open("127.0.0.1", 0).then { |server| server.addr[1].tap { server.close } }
    postgresql = "cannot open the lease store at postgresql://worker@127.0.0.1:#{port}/app"
    keywords = "cannot open the lease store at host=127.0.0.1 port=#{port} dbname=app"
    redis = "cannot open the lease store at redis://127.0.0.1:#{port}"
    [["postgresql://worker:hunter2@127.0.0.1:#{port}/app?connect_timeout=5", postgresql],
     ["postgres://worker:hunter2%20%21@127.0.0.1:#{port}/app", postgresql.sub("postgresql:", "postgres:")],
     ["postgresql://worker@127.0.0.1:#{port}/app?password=hunter2&connect_timeout=5", postgresql],
     ["postgresql://worker:hunter2 and more@127.0.0.1:#{port}/app", "cannot open the lease store at a PostgreSQL " \
                                                                     "server (an unreadable URL)"],
     ["host=127.0.0.1 port=#{port} dbname=app user=worker password=hunter2", "#{keywords} user=worker"],
     ["host=127.0.0.1 port=#{port} password='hunter2 \\' and more' dbname=app", keywords],
     ["password=hunter2 host=127.0.0.1 port=#{port} sslpassword=hunter2 dbname=app", keywords],
     ["redis://:hunter2@127.0.0.1:#{port}", redis],
     ["redis://worker:hunter2@127.0.0.1:#{port}/2", "#{redis}/2"],
     ["rediss://worker:hunter2@127.0.0.1:#{port}", redis.sub("redis:", "rediss:")],
     ["redis://worker:hunter2 and more@127.0.0.1:#{port}", "database is not a readable redis:// URL"],
     ["mysql://worker:hunter2@127.0.0.1:#{port}/app", "no lease store at a mysql:// URL"]]
  end

  def test_audit_and_web_never_print_a_databases_password
    databases_with_passwords.each do |database, named|
      %w[audit web].each do |command|
        status, out, err = run_cli(command, "--database", database)
        assert_equal [LeaseMachines::CLI::USAGE, ""], [status, out], "#{command} #{database}"
        refute_includes err, "hunter2", "#{command} #{database}"
        assert_match(/\Alease_machines #{command}: [^\n]+\n\z/, err, "#{command} #{database}")
        assert_includes err, "lease_machines #{command}: #{named}", "#{command} #{database}" unless missing_gem?(err)
      end
    end
  end

  # Whether +err+ says a gem the store or the dashboard needs is missing (then it names no database).
  def missing_gem?(err) = err.match?(/needs the \S+ gem|cannot open the lease store: /)

  def test_simulate_writes_the_report_and_returns_the_status
    status, out, err = run_cli("simulate", "--cycles", "300", "--seed", "4", "--json")
    assert_equal [LeaseMachines::CLI::OK, ""], [status, err]
    assert_equal LeaseMachines.simulate(cycles: 300, seed: 4).to_json, out.chomp
    status, out, = run_cli("simulate", "--cycles", "2000", "--without-fence")
    assert_equal LeaseMachines::CLI::FOUND, status
    assert_match(/^UNSAFE: /, out)
  end

  def test_usage_errors_go_to_err
    status, out, err = run_cli("simulate", "--workers", "one")
    assert_equal [LeaseMachines::CLI::USAGE, ""], [status, out]
    assert_equal "lease_machines simulate: invalid argument: --workers one\n" \
                 "Run `lease_machines simulate --help` for its options.\n", err
  end
end
