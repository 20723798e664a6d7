# frozen_string_literal: true

require "benchmark/ips"
require "etc"
require "fileutils"
require "json"
require "lease_machines"

# What bench/decisions.rb and bench/profile.rb share: the machine header, benchmark-ips with the suite's settings, the
# timed loops, the keyword methods over the floor, the check that a workload took the path it is meant to time, and
# the figures' format.
module Bench
  # benchmark-ips' warmup and measurement time per report, in seconds.
  WARMUP = Float(ENV.fetch("BENCH_WARMUP", "1"))
  TIME = Float(ENV.fetch("BENCH_TIME", "3"))

  # One timed report: +ips+ (benchmark-ips' central tendency) and its +error+ in percent.
  Figure = Data.define(:label, :ips, :error) do
    def ns = 1e9 / ips
  end

  # The gem's keyword methods over LeaseMachines::BenchmarkFloor's native methods (ffi/src/floor.rs), in the shape of
  # lib/lease_machines/authority.rb and table.rb: a keyword method calling the native one on self. Over the empty
  # methods, the keyword floor; over those that build a grant's or a renewal's records, the records floor.
  module KeywordFloor
    def acquire(owner:, now:, ttl:) = _acquire(owner, now, ttl)
    def renew(owner:, token:, now:, ttl:) = _renew(owner, token, now, ttl)
    def release(owner:, token:, now:) = _release(owner, token, now)

    def table_acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      _table_acquire(resource, owner, now, ttl, expected_revision)
    end

    def granted(owner:, now:, ttl:) = _granted(owner, now, ttl)
    def renewed(owner:, token:, now:, ttl:) = _renewed(owner, token, now, ttl)

    def table_granted(resource:, owner:, now:, ttl:, expected_revision: nil)
      _table_granted(resource, owner, now, ttl, expected_revision)
    end
  end
  LeaseMachines::BenchmarkFloor.include(KeywordFloor)

  # Where the timed loops' source is evaluated: no local variables but a loop's own; self is Bench.
  def self.scope = binding
  private_class_method :scope

  module_function

  # One benchmark-ips report in its manual-loop form (a lambda of the iteration count, which benchmark-ips times as
  # such because its arity is 1), written out from one template rather than by hand:
  #
  #   i = 0
  #   while i < times
  #     <step>           # now += ttl, say
  #     last = <call>    # subject.acquire(owner: 1, now:, ttl:), say; no line at all without a call
  #     i += 1
  #   end
  #
  # +locals+ are the loop's other variables with their first values (subject, now, ttl, ...); they and +last+, the
  # latest answer, live on from one run of the lambda to the next: read them back with Bench.local. The source is
  # evaluated anew for every report, so each loop is its own instruction sequence with its own inline caches, as a
  # loop written out is: the call stays inline, with no block, yield or send per iteration, and the figures are those
  # of the loops written out by hand.
  def timed(call, step: nil, **locals)
    source = <<~RUBY
      # frozen_string_literal: true
      ->(#{locals.keys.map { |name| "#{name}:" }.join(', ')}) do
        last = nil
        lambda do |times|
          i = 0
          while i < times
            #{step}
            #{"last = #{call}" if call}
            i += 1
          end
        end
      end
    RUBY
    eval(source, scope, "#{__FILE__} (Bench.timed: #{call || step})", 1).call(**locals)
  end

  # The variable +name+ of a loop Bench.timed made: by default its latest answer.
  def local(loop, name = :last) = loop.binding.local_variable_get(name)

  def yjit? = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? true : false

  def machine
    model = File.foreach("/proc/cpuinfo").find { |line| line.start_with?("model name") }&.split(":", 2)&.last&.strip
    "#{Etc.nprocessors} cores (nproc), #{model || RUBY_PLATFORM}"
  rescue SystemCallError
    "#{Etc.nprocessors} cores (nproc), #{RUBY_PLATFORM}"
  end

  def load_average
    File.read("/proc/loadavg").split.first(3).join(" ")
  rescue SystemCallError
    "unknown"
  end

  def header(title)
    puts "# #{title}"
    puts "ruby:      #{RUBY_DESCRIPTION}"
    puts "YJIT:      #{yjit? ? 'on' : 'off'}"
    puts "machine:   #{machine}"
    extension = $LOADED_FEATURES.grep(/lease_machines_native/).first
    puts "extension: #{extension} (built #{File.mtime(extension).utc.strftime('%F %T')} UTC)"
    puts "load:      #{load_average} (load average over 1, 5, 15 minutes before timing; keep the machine quiet)"
    puts "timing:    benchmark-ips #{Benchmark::IPS::VERSION}, warmup #{WARMUP} s, time #{TIME} s per report " \
         "(BENCH_WARMUP, BENCH_TIME)"
  end

  # Runs the reports the block adds to a benchmark-ips job (quietly) and returns a Figure per label.
  def ips(&)
    report = Benchmark.ips do |job|
      job.config(warmup: WARMUP, time: TIME, quiet: true)
      yield job
    end
    report.entries.to_h { |entry| [entry.label, Figure.new(entry.label, entry.ips, entry.error_percentage)] }
  end

  # Aborts unless a workload's last answer was the one every one of its iterations is meant to give.
  def expect!(what, actual, expected)
    return if actual == expected

    abort "bench/: #{what} took the wrong path: its last answer was #{actual.inspect}, not #{expected.inspect}. " \
          "The figures would not time what they say; fix the workload."
  end

  # Runs the block with the scratch directory +dir+ made, and removes it with all it holds however the block ends.
  # The block is given a list for the throwaway servers it starts there (a PostgresCluster): destroyed first.
  def scratch(dir)
    FileUtils.mkdir_p(dir)
    servers = []
    yield servers
  ensure
    servers&.each(&:destroy)
    FileUtils.rm_rf(dir)
  end

  # A benchmark's run on throwaway servers: its scratch directory (tmp/bench-NAME-PID), its rows, the rows it
  # skipped and why, the notes it prints before its tables, and what to close at its end (#close_all).
  class ServerRun
    def initialize(name)
      @name = name
      @dir = File.expand_path("../tmp/bench-#{name}-#{Process.pid}", __dir__)
      @rows = []
      @skipped = []
      @notes = []
      @closing = []
    end

    private

    # Closes what the run opened, the last first (a failure is told and the others still closed), then removes the
    # scratch directory.
    def close_all
      @closing.reverse_each do |close|
        close.call
      rescue StandardError => e
        warn "bench/#{@name}.rb: cleaning up: #{e.class}: #{e.message}"
      end
      FileUtils.rm_rf(@dir)
    end
  end

  # The +q+ quantile (0.0 to 1.0) of +values+ (Numerics, at least one), interpolated between the two nearest.
  def quantile(values, q)
    sorted = values.sort
    at = q * (sorted.size - 1)
    low = sorted[at.floor]
    low + ((sorted[at.ceil] - low) * (at - at.floor))
  end

  # The stores a benchmark runs (Symbols): STORES, names separated by commas, or +default+ without it.
  def selected_stores(default) = ENV.fetch("STORES", default.join(",")).split(",").map { _1.strip.to_sym }

  def si(ips)
    return format("%.2fM", ips / 1e6) if ips >= 1e6
    return format("%.1fk", ips / 1e3) if ips >= 1e3

    format("%.0f", ips)
  end
end
