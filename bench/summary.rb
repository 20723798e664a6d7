# frozen_string_literal: true

# The figures of bench/decisions.rb runs (the JSON files BENCH_RESULTS names) as one Markdown table, for
# docs/performance.md's "The Ruby API":
#
#   ruby bench/summary.rb tmp/bench/yjit-off.json tmp/bench/yjit-on.json
#
# `bin/rake bench` writes those two files and runs this.

require "json"

runs = ARGV.map { |path| JSON.parse(File.read(path), symbolize_names: true) }
abort "usage: ruby bench/summary.rb RESULTS.json..." if runs.empty?

ns = ->(figure) { figure ? format(figure[:ns] < 100 ? "%.1f ns" : "%.0f ns", figure[:ns]) : "" }
# Native over one of the operation's floors, with its target's verdict where it has one; empty without that floor.
ratio = lambda do |operation, floor|
  value = operation[:ratios][floor] or return ""
  target = operation[:targets].find { |candidate| candidate[:floor] == floor.to_s }
  return format("%.2fx", value) unless target

  format("%.2fx (target at most %.1fx: %s)", value, target[:at_most], target[:met] ? "met" : "**missed**")
end

first = runs.first
puts "Measured with `bin/rake bench` (benchmark-ips, #{first[:warmup]} s warmup, #{first[:time]} s per report) " \
     "on #{first[:machine]}, #{first[:ruby]}."
puts
puts "| operation | YJIT | floor | floor behind keywords | records floor | native | native / floor | " \
     "native / keyword floor | native / records floor | pure Ruby | speed-up over pure Ruby |"
puts "|---|---|---:|---:|---:|---:|---|---|---|---:|---|"
runs.first[:operations].map { |operation| operation[:name] }.each do |name|
  runs.each do |run|
    operation = run[:operations].find { |candidate| candidate[:name] == name } or next
    figures = operation[:figures]
    label = "`#{name}`#{' (derived)' if operation[:derived]}"
    floors = %i[floor keyword_floor records_floor]
    cells = [label, run[:yjit] ? "on" : "off", *figures.values_at(*floors, :native).map(&ns),
             *floors.map { |floor| ratio.call(operation, floor) }, ns.call(figures[:ruby]),
             format("%.2fx", operation[:speedup])]
    puts "| #{cells.join(' | ')} |"
  end
end
