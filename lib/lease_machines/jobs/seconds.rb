# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # A length of time a job's lease is given in (a TTL, a renewal period, a wait): an ActiveSupport::Duration
    # (30.seconds) or a number of seconds, positive and at most MAX: 2**63 seconds (about 292 billion years), the
    # longest TTL whose deadline (now + ttl, counted by the core in nanoseconds up to about 2**64 seconds) cannot
    # overflow for any clock reading below 2**63 seconds, the wall clock's Unix time included. A longer one would be
    # accepted here and refused at every perform.
    module Seconds
      MAX = 2**63

      module_function

      # +value+ as Float seconds. TypeError or ArgumentError, their message beginning with +what+ (the option's
      # name), for anything else.
      def from(value, what)
        value = value.to_f if defined?(ActiveSupport::Duration) && ActiveSupport::Duration === value
        unless Integer === value || Float === value
          raise TypeError, "#{what} must be a Duration or Float seconds, got #{LeaseMachines.shown(value)}"
        end
        unless value.positive? && (Integer === value || value.finite?)
          raise ArgumentError, "#{what} must be positive and finite, got #{LeaseMachines.shown(value)}"
        end
        if value > MAX
          raise ArgumentError, "#{what} must be at most 2**63 seconds (about 292 billion years: a longer one " \
                               "overflows the lease's deadline), got #{LeaseMachines.shown(value)}"
        end

        value.to_f
      end
    end
  end
end
