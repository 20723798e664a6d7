# frozen_string_literal: true

require "benchmark/ips"
require "etc"
require "fileutils"
require "json"
require "lease_machines"

# What bench/decisions.rb and bench/profile.rb share: the machine header, benchmark-ips with the suite's settings, the
# check that a workload took the path it is meant to time, and the figures' format.
module Bench
  # benchmark-ips' warmup and measurement time per report, in seconds.
  WARMUP = Float(ENV.fetch("BENCH_WARMUP", "1"))
  TIME = Float(ENV.fetch("BENCH_TIME", "3"))

  # One timed report: +ips+ (benchmark-ips' central tendency) and its +error+ in percent.
  Figure = Data.define(:label, :ips, :error) do
    def ns = 1e9 / ips
  end

  module_function

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

  def si(ips)
    return format("%.2fM", ips / 1e6) if ips >= 1e6
    return format("%.1fk", ips / 1e3) if ips >= 1e3

    format("%.0f", ips)
  end
end
