# frozen_string_literal: true

require "optparse"
require "lease_machines"

module LeaseMachines
  # The +lease_machines+ command (exe/lease_machines): +simulate+ runs the deterministic failover simulation,
  # +audit FILE+ checks a JSON event log (+audit --database+ a lease store's), +web --database+ serves the lease
  # dashboard. Exit status: 0 when all is well (a dashboard stopped by INT or TERM too), 1 when the simulation found
  # a violation or the audit a finding, 2 for a usage error (an unknown command or option, a missing or extra
  # argument, a bad value, an unreadable file or document, a store that cannot be opened) or a report that cannot be
  # written (a full disk, a closed stdout, a reader that stopped reading), 130 when interrupted. Reports go to +out+, errors (one line each, never a backtrace) and the
  # progress bar to +err+; whatever the locale, files are read as the UTF-8 bytes they hold.
  class CLI
    # Exit statuses.
    OK = 0
    FOUND = 1
    USAGE = 2
    INTERRUPTED = 130

    # A usage error: printed with the command's name and a pointer to its help, exit status 2.
    class UsageError < StandardError; end

    # Input that cannot be used (an unreadable file, a document that is not an event log): one line, exit status 2.
    class InputError < StandardError; end

    # The report could not be written to +out+: one line, exit status 2.
    class WriteError < StandardError; end

    SUMMARY = <<~TEXT
      Usage: lease_machines COMMAND [options]

      Commands:
        simulate              Run the deterministic failover simulation and check every write
        audit FILE            Check a JSON event log (format 1) against the lease rules
        audit --database DB   Check a lease store's event log (a path, a postgres:// or redis:// URL) the same way
        web --database DB     Serve the lease dashboard of a lease store, read-only, on http://127.0.0.1:9292/

      Run `lease_machines COMMAND --help` for a command's options.
      Exit status: 0 all well, 1 a violation or finding, 2 a usage error, 130 interrupted.
    TEXT

    # The commands, as `help COMMAND` and the unknown command's message name them.
    COMMANDS = %w[simulate audit web].freeze
    # Where `web` listens unless told otherwise: this machine only.
    WEB_BIND = "127.0.0.1"
    WEB_PORT = 9292

    # Runs a simulation of at least this much work (cycles times workers) with a progress bar when +err+ is a
    # terminal.
    PROGRESS_WORK = 10_000_000

    def initialize(out: $stdout, err: $stderr)
      @out = out
      @err = err
    end

    # Runs the command +argv+ names and returns the exit status.
    def run(argv)
      argv = argv.dup
      command = nil
      case (name = argv.shift)
      when *COMMANDS
        command = name
        catch(:help) { __send__(name, argv) }
      when "-h", "--help", "help" then help(argv)
      when "-v", "--version"
        raise UsageError, "unexpected argument #{LeaseMachines.shown(argv.first)}" unless argv.empty?

        report("lease_machines #{VERSION}")
        OK
      when nil then usage(nil, "no command given")
      else usage(nil, "unknown command #{LeaseMachines.shown(name)} (valid: #{COMMANDS.join(", ")})")
      end
    rescue UsageError, OptionParser::ParseError => e
      usage(command, e.message)
    rescue InputError => e
      complain(command, e.message)
      USAGE
    rescue WriteError => e
      complain(command, "cannot write the report: #{e.message}")
      USAGE
    rescue Interrupt
      complain(command, "interrupted")
      INTERRUPTED
    end

    private

    # Writes TEXT to +out+ and flushes it, so that a failed write is an error here rather than lost at exit: a
    # WriteError for any failure (EPIPE included: a reader that stopped reading did not get the report).
    def report(text)
      @out.puts(text)
      @out.flush
    rescue IOError, SystemCallError => e
      raise WriteError, e.message.sub(/ @ .*/, "")
    end

    # `help` (the summary) or `help COMMAND` (that command's options); anything more is a usage error.
    def help(argv)
      case argv
      in [] then report(SUMMARY)
      in [String => command] if COMMANDS.include?(command) then return run([command, "--help"])
      else
        raise UsageError, "help takes one COMMAND (#{COMMANDS.join(", ")}), got " \
                          "#{argv.map { LeaseMachines.shown(_1) }.join(" ")}"
      end
      OK
    end

    def usage(command, message)
      complain(command, message)
      complain(nil, command ? "Run `lease_machines #{command} --help` for its options." : SUMMARY, prefix: false)
      USAGE
    end

    # Writes +message+ to +err+ as one line, prefixed by the command's name; a stderr that cannot be written to
    # (closed, full) changes nothing, so the exit status stays the one the fault calls for.
    def complain(command, message, prefix: true)
      text = message.to_s
      text = "lease_machines#{" #{command}" if command}: #{one_line(text)}" if prefix
      @err.puts(text)
      @err.flush
    rescue IOError, SystemCallError
      nil
    end

    # +text+ (a file name, a message) as UTF-8 on one line: bytes that are not UTF-8 and control characters escaped.
    def one_line(text)
      text = text.to_s.dup.force_encoding(Encoding::UTF_8)
      text = text.inspect[1...-1] unless text.valid_encoding?
      text.gsub(/[[:cntrl:]]/) { _1.inspect[1...-1] }
    end


    # An OptionParser without its built-in --version and --*-completion-* options (which print and exit on their
    # own, with status 1 or 0): only the options a command defines, and its own -h/--help, which prints the help and
    # ends the command with status 0 (thrown to #run).
    def option_parser
      OptionParser.new do |opts|
        yield opts
        opts.on("-h", "--help", "Show this help") do
          report(opts)
          throw :help, OK
        end
      end.tap { _1.base.long.clear }
    end

    # The help's head: +usage+, a blank line, +text+ (lines of a command's description), a blank line.
    def describe(opts, usage, text)
      opts.banner = usage
      opts.separator ""
      text.each_line(chomp: true) { opts.separator(_1) }
      opts.separator ""
    end

    # The options of +argv+ parsed by +parser+; a UsageError for any argument left over.
    def options_only(parser, argv)
      rest = parser.parse(argv)
      raise UsageError, "unexpected argument #{LeaseMachines.shown(rest.first)}" unless rest.empty?
    end

    # The --database option of the commands that read a lease store, kept in +options+.
    def database_option(opts, options)
      opts.on("--database DB", "The lease store: a SQLite file's path, a postgres:// URL or libpq keyword",
              "string (needs the pg gem), or a redis:// or rediss:// URL (needs redis-client)") do
        options[:database] = _1
      end
    end

    # --- simulate -------------------------------------------------------------------------------------------------

    def simulate(argv)
      options = { json: false, progress: nil }
      config = SimulationConfig.new
      members = {}
      parser = option_parser do |opts|
        describe(opts, "Usage: lease_machines simulate [options]", <<~TEXT)
          Runs workers contending for leases through a lease table, writing through a fence, and checks
          every accepted write with an independent oracle. Deterministic: one seed, one report.
          Exits 1 when a write broke the fencing rule or the event log failed its audit.
        TEXT
        opts.on("--preset NAME", %w[failover], "Start from a preset: failover (moonleasekit's benchmark:",
                "50,000 cycles, 2 workers, 1 resource, TTL 10 s)") do
          config = SimulationConfig.failover_preset
        end
        opts.on("--cycles N", Integer, "Cycles to run (default #{config.cycles})") { members[:cycles] = count(_1) }
        opts.on("--workers W", Integer, "Contending workers, 2 to 1024 (default #{config.workers})") do
          members[:workers] = count(_1)
        end
        opts.on("--resources R", Integer, "Resources, 1 to 1024 (default #{config.resources})") do
          members[:resources] = count(_1)
        end
        opts.on("--ttl SECONDS", Float, "The lease TTL, seconds (default #{config.ttl})") do
          raise OptionParser::InvalidArgument, "#{_1} (must be finite and at least 1e-6)" unless _1.finite? && _1 >= 1e-6

          members[:ttl] = _1
        end
        opts.on("--seed S", Integer, "The random seed, 0 to 2**64-1 (default #{config.seed})") { members[:seed] = count(_1) }
        opts.on("--scenario NAME", %w[contention failover], "contention or failover (default #{config.scenario})") do
          members[:scenario] = _1.to_sym
        end
        opts.on("--clock-policy NAME", %w[clamp reject], "clamp or reject (default #{config.clock_policy})") do
          members[:clock_policy] = _1.to_sym
        end
        opts.on("--restore-every N", Integer, "Checkpoint and restore the table every N cycles, 0 never") do
          members[:restore_every] = count(_1)
        end
        opts.on("--without-fence", "Let the storage accept every write unchecked (shows what the fence prevents)") do
          members[:fence] = :disabled
        end
        opts.on("--json", "Print the report as JSON (format 1) instead of a summary") { options[:json] = true }
        opts.on("--[no-]progress", "A progress bar on stderr (default: for long runs on a terminal)") do
          options[:progress] = _1
        end
      end
      options_only(parser, argv)
      config = config.with(**members)
      outcome = run_simulation(config, options[:progress])
      report(options[:json] ? outcome.to_json : summary(outcome))
      outcome.safe? ? OK : FOUND
    rescue ArgumentError, RangeError, TypeError => e
      raise UsageError, e.message
    end

    # +value+, when it is not negative (OptionParser names the option in the error).
    def count(value)
      raise OptionParser::InvalidArgument, "#{value} (must be 0 or more)" if value.negative?

      value
    end

    def run_simulation(config, progress)
      show = progress.nil? ? @err.tty? && config.cycles * config.workers >= PROGRESS_WORK : progress
      return LeaseMachines.simulate(config) unless show

      require "ruby-progressbar"
      bar = ProgressBar.create(title: "Simulating", total: config.cycles, output: @err,
                               format: "%t |%B| %c/%C cycles %e")
      LeaseMachines.simulate(config) { |cycles_run, _cycles| bar.progress = cycles_run }.tap { bar.finish }
    end

    def summary(outcome)
      config = outcome.config
      fence = config.fence == :enforced ? "enforced" : "DISABLED"
      lines = [
        "Simulated #{number(outcome.cycles)} cycles of #{config.scenario}: #{config.workers} workers, " \
        "#{config.resources} #{config.resources == 1 ? "resource" : "resources"}, TTL #{config.ttl} s, seed #{config.seed}, " \
        "clock policy #{config.clock_policy}, fence #{fence}",
        row("leases acquired", outcome.leases_acquired,
            "plus rotations #{number(outcome.rotations)}, transfers #{number(outcome.transfers)}"),
        row("takeovers", outcome.takeovers, "grants to another owner than the resource's last"),
        row("renewals", outcome.renewals, "releases #{number(outcome.releases)}, reaps #{number(outcome.reaps)}, " \
                                         "leases lost #{number(outcome.leases_lost)}"),
        row("pauses past the TTL", outcome.pauses, "clock steps back #{number(outcome.clock_steps_back)}, " \
                                                  "refused for it #{number(outcome.clock_rejections)}"),
        row("table restores", outcome.restores, "from a checkpoint, mid-run"),
        row("writes accepted", outcome.writes_accepted, "#{number(outcome.late_writes_accepted)} after their lease " \
                                                       "ended, nothing newer written yet"),
        row("stale writes refused", outcome.stale_writes_rejected, "by the fence"),
        row("final fencing token", outcome.final_token),
        row("events audited", outcome.events, outcome.audit_valid ? "audit valid" : "AUDIT FAILED: " \
                                             "#{number(outcome.audit_findings)} findings"),
        row("violations", outcome.violations, "accepted writes with a stale token"),
        format("  %-22s %016x", "event digest", outcome.event_digest)
      ]
      lines << if outcome.safe?
                 "SAFE: every write with a stale token was refused, and the event log passed its audit."
               else
                 "UNSAFE: #{number(outcome.violations)} violations, #{number(outcome.audit_findings)} audit findings."
               end
      lines.join("\n")
    end

    def row(label, value, note = nil)
      format("  %-22s %12s%s", label, number(value), note ? "  (#{note})" : "")
    end

    def number(value) = value.to_s.gsub(/\d(?=(\d{3})+\z)/, "\\0,")

    # --- audit ----------------------------------------------------------------------------------------------------

    def audit(argv)
      json = false
      store = {}
      parser = option_parser do |opts|
        usage = "Usage: lease_machines audit [options] FILE\n       lease_machines audit [options] --database DB"
        describe(opts, usage, <<~TEXT)
          Checks a JSON event log (format 1, as Table#events written by LeaseMachines.events_to_json)
          against the rules every lease history keeps, and prints each finding. FILE - reads stdin.
          With --database, the event log of a lease store (Store#audit): each finding's event is the
          event's id. Exits 1 when there is a finding.
        TEXT
        database_option(opts, store)
        opts.on("--json", "Print the audit report as JSON (format 1)") { json = true }
      end
      files = parser.parse(argv)
      label, audited = store[:database] ? audit_store(store[:database], files) : audit_file(files)
      report(json ? audited.to_json : findings(label, audited))
      audited.valid? ? OK : FOUND
    end

    # [FILE, its AuditReport] of the one FILE +files+ names.
    def audit_file(files)
      raise UsageError, "no FILE given" if files.empty?
      raise UsageError, "one FILE at a time, got #{files.size}" if files.size > 1

      file = files.first
      text = read(file)
      audited = begin
        LeaseMachines.audit(LeaseMachines.events_from_json(text))
      rescue ArgumentError, TypeError, RangeError => e # InvalidDocument, or an event the audit cannot take
        raise InputError, "#{one_line(file)}: not an event log: #{e.message}"
      end
      [file, audited]
    end

    # [the store's path, its AuditReport] of the lease store at +database+.
    def audit_store(database, files)
      raise UsageError, "--database or a FILE, not both (got #{LeaseMachines.shown(files.first)})" unless files.empty?

      with_store(database) { |store| [store.path, store.audit] }
    end

    # Yields the lease store at +database+ (a SQLite file that must be there already, a PostgreSQL URL or libpq
    # keyword string, a Redis URL) and closes it; InputError when it cannot be opened or read. The commands only
    # read: the store is opened with migrate: false, so that it never creates or upgrades tables that processes of
    # another version use. A server is named as its store names it (Store#path, StoreError): never with a password.
    def with_store(database)
      require "lease_machines/store"
      unless [Store::Redis, Store::PostgreSQL].any? { _1.accepts?(database) } || File.file?(database)
        raise InputError, "no lease store at #{missing(database)}: no such file"
      end

      store = begin
        Store.new(database, migrate: false)
      rescue LoadError => e
        raise InputError, "cannot open the lease store: #{e.message} (SQLite needs the sqlite3 gem, PostgreSQL pg, " \
                          "Redis redis-client)"
      end
      yield store
    rescue StoreError, ArgumentError, TypeError => e
      raise InputError, e.message
    ensure
      store&.close
    end

    # +database+, which no store takes and no file is, as a message names it: a URL of another scheme by its scheme
    # alone (what follows may be a password), anything else as the path it is.
    def missing(database)
      scheme = database[%r{\A([a-z][a-z0-9+.-]*)://}i, 1]
      scheme ? "a #{scheme}:// URL (a lease store is a SQLite path, a postgres:// or redis:// URL)" : one_line(database)
    end

    # The bytes of +file+ ("-": stdin), as they are: the extension reads them as UTF-8 whatever the locale.
    def read(file)
      file == "-" ? $stdin.binmode.read : File.binread(file)
    rescue IOError, SystemCallError => e
      raise InputError, "cannot read #{one_line(file)}: #{e.message.sub(/ @ .*/, "")}"
    end

    # The report of +audited+ (an AuditReport) of +file+ (a FILE, or a store's path): a line per finding, then one
    # that counts them.
    def findings(file, audited)
      file = one_line(file)
      events = "#{number(audited.checked_events)} #{audited.checked_events == 1 ? "event" : "events"}"
      return "#{file}: #{events} checked, no findings" if audited.valid?

      lines = audited.findings.map do |finding|
        "#{file}: event #{finding.event_index} (resource #{finding.resource.inspect}): #{finding.code}: #{finding.message}"
      end
      count = audited.findings.size
      lines << "#{file}: #{events} checked, #{number(count)} #{count == 1 ? "finding" : "findings"}"
      lines.join("\n")
    end

    # --- web ------------------------------------------------------------------------------------------------------

    def web(argv)
      options = { bind: WEB_BIND, port: WEB_PORT }
      parser = option_parser do |opts|
        describe(opts, "Usage: lease_machines web --database DB [options]", <<~TEXT)
          Serves the lease dashboard (LeaseMachines::Web) of a lease store with WEBrick: its leases, each
          resource's timeline, the audit, and /metrics for Prometheus. Read-only: the command line never
          offers revoke (mount LeaseMachines::Web with actions: and authorize: in your application for it).
          Runs until interrupted (Ctrl-C or TERM), then exits 0. Needs the rack, rackup and webrick gems.
        TEXT
        database_option(opts, options)
        opts.on("--bind ADDR", "The address to listen on (default #{WEB_BIND}: this machine only)") do
          options[:bind] = _1
        end
        opts.on("--port N", Integer, "The port, 0 to 65535 (default #{WEB_PORT}; 0 picks a free one)") do
          raise OptionParser::InvalidArgument, "#{_1} (must be 0 to 65535)" unless _1.between?(0, 65_535)

          options[:port] = _1
        end
        opts.on("--actions", "Refused: the command line serves the dashboard read-only") do
          raise UsageError, "--actions: the command line serves the dashboard read-only; revoke needs " \
                            "LeaseMachines::Web.new(actions: true, authorize: ...) in your own application"
        end
      end
      options_only(parser, argv)
      raise UsageError, "--database is required: the lease store to show" unless options[:database]

      serve(options)
    end

    def serve(options)
      begin
        require "lease_machines/web"
      rescue LoadError => e
        raise InputError, "the dashboard needs the rack gem: #{e.message}"
      end
      with_store(options[:database]) do |store|
        Web::Server.run(Web.new(store: store), bind: options[:bind], port: options[:port], log: @err) do |url|
          report("lease_machines web: serving #{one_line(Web::Redaction.mask(store.path))} on #{url} " \
                 "(read-only; Ctrl-C stops)")
        end
      rescue LoadError => e
        raise InputError, "the dashboard needs the webrick and rackup gems: #{e.message}"
      rescue SystemCallError => e
        raise InputError, "cannot listen on #{options[:bind]} port #{options[:port]}: #{e.message.sub(/ @ .*/, "")}"
      end
      OK
    end
  end
end
