# frozen_string_literal: true

module LeaseMachines
  class Web
    # /metrics: the store's figures in the Prometheus text exposition format 0.0.4, each metric with its HELP and TYPE
    # lines and label values escaped as the format says (\\, \" and \n).
    #
    # The live leases are counted from Store#resources at the store's clock, page by page, over at most HELD_SCAN
    # rows (the store has no count query for them): lease_machines_leases_held_complete says whether every row was
    # counted (1) or the count stopped at the bound (0), so that a store larger than that is never under-reported
    # silently.
    #
    # A scrape is a few counting queries and those bounded pages, repeated every few seconds by a machine. The audit
    # is not among its figures: it loads every change the log keeps into memory (at 300,000 events, most of a second
    # and 200 MB), and belongs to the /audit page, which a person opens.
    class Prometheus
      HELD_SCAN = 10_000
      PAGE = 1000

      # +expiring_within+ (Float seconds) is the dashboard's; the live leases are counted over at most +scan+ rows,
      # read +page+ rows at a time (Integers, 1 or more; +page+ at most 1000, Store#resources' limit).
      def initialize(expiring_within, scan: HELD_SCAN, page: PAGE)
        @expiring_within = expiring_within
        @scan = scan
        @page = page
      end

      # Reads the figures from +store+; returns self.
      def read(store)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @now = store.now
        @resources = store.resource_count
        @held, @expiring, @complete = live(store)
        @events = store.event_counts
        @duration = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        self
      end

      # The exposition, ending in a newline.
      def to_s
        [
          metric("lease_machines_resources", "gauge",
                 "Leases the store has rows for (resources, and semaphore slots above 0).", @resources),
          metric("lease_machines_leases_held", "gauge",
                 "Leases live at the store's clock (held or expiring), counted over at most #{@scan} rows.", @held),
          metric("lease_machines_leases_expiring", "gauge",
                 "Live leases with less than the dashboard's expiring_within seconds left.", @expiring),
          metric("lease_machines_leases_held_complete", "gauge",
                 "1 when lease_machines_leases_held counted every row, 0 when it stopped at #{@scan}.",
                 @complete ? 1 : 0),
          # A gauge, not a counter: retention prunes the log, so a count falls as well as rises.
          metric("lease_machines_events", "gauge",
                 "Events the store's event log keeps now, by kind (retention prunes them).",
                 @events.map { |kind, count| [{ "kind" => kind.to_s }, count] }),
          metric("lease_machines_store_time_seconds", "gauge", "The store's clock, seconds since the Unix epoch.", @now),
          metric("lease_machines_scrape_duration_seconds", "gauge", "How long this scrape took to read the store.",
                 @duration)
        ].join
      end

      # +value+ a label value as the format writes it.
      def self.label(value) = value.to_s.gsub(/[\\"\n]/, "\\" => "\\\\", '"' => '\\"', "\n" => "\\n")

      # +value+ (Integer or Float) as a sample value.
      def self.number(value)
        return value.to_s if Integer === value
        return value.positive? ? "+Inf" : "-Inf" if value.infinite?

        value.nan? ? "NaN" : value.to_s
      end

      private

      # [held, expiring, complete]: the live leases among the first +@scan+ rows, at the store's clock.
      def live(store)
        held = expiring = seen = 0
        after = nil
        loop do
          limit = [@page, @scan - seen].min
          states = store.resources(after: after, limit: limit)
          states.each do |state|
            row = Row.at(state, @now, @expiring_within)
            held += 1 unless row.state == :free
            expiring += 1 if row.state == :expiring
          end
          seen += states.size
          return [held, expiring, true] if states.size < limit
          # The bound reached: complete only if no row is left beyond it.
          return [held, expiring, store.resources(after: states.last.key, limit: 1).empty?] if seen == @scan

          after = states.last.key
        end
      end

      # A metric's HELP, TYPE and samples: +samples+ is one value, or [labels (a Hash), value] pairs.
      def metric(name, type, help, samples)
        samples = [[{}, samples]] unless Array === samples
        lines = ["# HELP #{name} #{help.gsub(/[\\\n]/, "\\" => "\\\\", "\n" => "\\n")}", "# TYPE #{name} #{type}"]
        samples.each do |labels, value|
          text = labels.map { |key, label| %(#{key}="#{Prometheus.label(label)}") }.join(",")
          lines << "#{name}#{"{#{text}}" unless text.empty?} #{Prometheus.number(value)}"
        end
        "#{lines.join("\n")}\n"
      end
    end
  end
end
