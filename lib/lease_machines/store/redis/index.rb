# frozen_string_literal: true

# The index of the Redis store (INDEX, every resource's name in a sorted set), read BATCH names at a time, and
# the rows of the names read: #leases' pages and #lease_count.

module LeaseMachines
  class Store
    class Redis < Adapter
      # How many names one read of the index takes.
      BATCH = 500
      private_constant :BATCH

      private

      # [[name, rows]] of +names+ (rows[i]: slot i's, nil where there is none), one pipelined round trip.
      def rows_of(names)
        replies = fetch do |pipeline|
          names.each do |name|
            pipeline.call("HMGET", self.class.key(name, "lease"), *COLUMNS)
            pipeline.call("HGETALL", self.class.key(name, "slots"))
          end
        end
        names.each_with_index.map { |name, i| [name, [row_of(replies[2 * i]), *slot_rows(replies[2 * i + 1])]] }
      end

      # Yields the names of the sorted set +key+ from +min+ to +max+ (ZRANGEBYLEX bounds), BATCH at a time.
      def each_names(key, min, max)
        loop do
          names = fetch("ZRANGEBYLEX", key, min, max, "LIMIT", 0, BATCH)
          break if names.empty?

          yield names
          break if names.size < BATCH

          min = "(#{names.last}"
        end
      end

      # The ZRANGEBYLEX bound after every name that starts with +prefix+ ("+" when none is).
      def prefix_stop(prefix)
        stop = prefix.empty? ? nil : SQLite.prefix_end(prefix)
        stop ? "(#{stop}" : "+"
      end
    end
  end
end
