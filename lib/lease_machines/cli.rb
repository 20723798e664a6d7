# frozen_string_literal: true

require "optparse"
require "lease_machines"

module LeaseMachines
  # The +lease_machines+ command (exe/lease_machines): +simulate+ runs the deterministic failover simulation,
  # +audit FILE+ checks a JSON event log. Exit status: 0 when all is well, 1 when the simulation found a violation or
  # the audit a finding, 2 for a usage error (an unknown command or option, a missing or extra argument, a bad value,
  # an unreadable file or document) or a report that cannot be written (a full disk, a closed stdout, a reader that
  # stopped reading), 130 when interrupted. Reports go to +out+, errors (one line each, never a backtrace) and the
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
        simulate     Run the deterministic failover simulation and check every write
        audit FILE   Check a JSON event log (format 1) against the lease rules

      Run `lease_machines COMMAND --help` for a command's options.
      Exit status: 0 all well, 1 a violation or finding, 2 a usage error, 130 interrupted.
    TEXT

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
      when "simulate", "audit"
        command = name
        name == "simulate" ? simulate(argv) : audit(argv)
      when "-h", "--help", "help" then help(argv)
      when "-v", "--version"
        raise UsageError, "unexpected argument #{LeaseMachines.shown(argv.first)}" unless argv.empty?

        report("lease_machines #{VERSION}")
        OK
      when nil then usage(nil, "no command given")
      else usage(nil, "unknown command #{LeaseMachines.shown(name)} (valid: simulate, audit)")
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
      in ["simulate" | "audit" => command] then return run([command, "--help"])
      else raise UsageError, "help takes one COMMAND (simulate or audit), got #{argv.map { LeaseMachines.shown(_1) }.join(" ")}"
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
    # own, with status 1 or 0): only the options a command defines, and its own --help.
    def option_parser(&)
      OptionParser.new(&).tap { _1.base.long.clear }
    end

    # --- simulate -------------------------------------------------------------------------------------------------

    def simulate(argv)
      options = { json: false, progress: nil }
      config = SimulationConfig.new
      members = {}
      parser = option_parser do |opts|
        opts.banner = "Usage: lease_machines simulate [options]"
        opts.separator ""
        opts.separator "Runs workers contending for leases through a lease table, writing through a fence, and checks"
        opts.separator "every accepted write with an independent oracle. Deterministic: one seed, one report."
        opts.separator "Exits 1 when a write broke the fencing rule or the event log failed its audit."
        opts.separator ""
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
        opts.on("-h", "--help", "Show this help") do
          report(opts)
          return OK
        end
      end
      rest = parser.parse(argv)
      raise UsageError, "unexpected argument #{LeaseMachines.shown(rest.first)}" unless rest.empty?

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
      parser = option_parser do |opts|
        opts.banner = "Usage: lease_machines audit [options] FILE"
        opts.separator ""
        opts.separator "Checks a JSON event log (format 1, as Table#events written by LeaseMachines.events_to_json)"
        opts.separator "against the rules every lease history keeps, and prints each finding. FILE - reads stdin."
        opts.separator "Exits 1 when there is a finding."
        opts.separator ""
        opts.on("--json", "Print the audit report as JSON (format 1)") { json = true }
        opts.on("-h", "--help", "Show this help") do
          report(opts)
          return OK
        end
      end
      files = parser.parse(argv)
      raise UsageError, "no FILE given" if files.empty?
      raise UsageError, "one FILE at a time, got #{files.size}" if files.size > 1

      file = files.first
      text = read(file)
      audited = begin
        LeaseMachines.audit(LeaseMachines.events_from_json(text))
      rescue ArgumentError, TypeError, RangeError => e # InvalidDocument, or an event the audit cannot take
        raise InputError, "#{one_line(file)}: not an event log: #{e.message}"
      end
      report(json ? audited.to_json : findings(file, audited))
      audited.valid? ? OK : FOUND
    end

    # The bytes of +file+ ("-": stdin), as they are: the extension reads them as UTF-8 whatever the locale.
    def read(file)
      file == "-" ? $stdin.binmode.read : File.binread(file)
    rescue IOError, SystemCallError => e
      raise InputError, "cannot read #{one_line(file)}: #{e.message.sub(/ @ .*/, "")}"
    end

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
  end
end
