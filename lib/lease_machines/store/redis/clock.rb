# frozen_string_literal: true

# The carried clock of the Redis store: the server's TIME as this store last read it, carried forward by this
# process's monotonic clock, which a commit checks against its own TIME (CARRIED_CLOCK_US).

module LeaseMachines
  class Store
    class Redis < Adapter
      # How long before the commit's TIME a decision's instant carried from an earlier reading of it may be, Integer
      # microseconds (as the commit script takes it): longer, and the commit answers the resource as it is now.
      CARRIED_CLOCK_US = "2000"
      private_constant :CARRIED_CLOCK_US

      private

      # A reading of the server's TIME ([seconds, microseconds], Strings) taken now, for #carried_clock.
      def clock_read(seconds, microseconds)
        @clock = [Integer(seconds, 10) * 1_000_000 + Integer(microseconds, 10),
                  Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)]
      end

      # The last reading of the server's clock (#clock_read), Float seconds since the Unix epoch.
      def clock_seconds = @clock.first / 1_000_000.0

      # The server's clock now, as Integer microseconds: its last reading, plus how long this process's monotonic clock
      # says has passed since. Never later than the server's clock but by the two clocks' drift (which the commit's
      # check refuses); earlier by at most a reply's way back, until the commit's check.
      def carried_clock
        server, local = @clock
        server + (Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond) - local)
      end
    end
  end
end
