# frozen_string_literal: true

# The figures of bench/decisions.rb runs (the JSON files BENCH_RESULTS names) as one Markdown table, for README.md's
# Performance section:
#
#   ruby bench/summary.rb tmp/bench/yjit-off.json tmp/bench/yjit-on.json
#
# `bin/rake bench` writes those two files and runs this.

require "json"

runs = ARGV.map { |path| JSON.parse(File.read(path), symbolize_names: true) }
abort "usage: ruby bench/summary.rb RESULTS.json..." if runs.empty?

ns = ->(figure) { figure ? format(figure[:ns] < 100 ? "%.1f ns" : "%.0f ns", figure[:ns]) : "" }
against = lambda do |value, target, wording, met|
  return format("%.2fx", value) unless target

  format("%.2fx (#{wording}: %s)", value, target, met ? "met" : "**missed**")
end

first = runs.first
puts "Measured with `bin/rake bench` (benchmark-ips, #{first[:warmup]} s warmup, #{first[:time]} s per report) " \
     "on #{first[:machine]}, #{first[:ruby]}."
puts
puts "| operation | YJIT | floor | floor behind keywords | native | native / floor | pure Ruby | " \
     "speed-up over pure Ruby |"
puts "|---|---|---:|---:|---:|---|---:|---|"
runs.first[:operations].map { |operation| operation[:name] }.each do |name|
  runs.each do |run|
    operation = run[:operations].find { |candidate| candidate[:name] == name } or next
    figures = operation[:figures]
    floor_ratio = against.call(operation[:floor_ratio], operation[:max_floor], "target at most %.1fx",
                               operation[:max_floor].nil? || operation[:floor_ratio] <= operation[:max_floor])
    speedup = against.call(operation[:speedup], operation[:min_speedup], "target at least %.1fx",
                           operation[:min_speedup].nil? || operation[:speedup] >= operation[:min_speedup])
    label = "`#{name}`#{' (derived)' if operation[:derived]}"
    puts "| #{label} | #{run[:yjit] ? 'on' : 'off'} | #{ns.call(figures[:floor])} | " \
         "#{ns.call(figures[:keyword_floor])} | #{ns.call(figures[:native])} | #{floor_ratio} | " \
         "#{ns.call(figures[:ruby])} | #{speedup} |"
  end
end
