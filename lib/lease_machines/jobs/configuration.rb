# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Where jobs take their leases and write through the fence, outside Rails as inside it.
    #
    # - +store+: a LeaseMachines::Store, or a factory (anything with +call+) that opens one. A Store is one
    #   connection: the jobs' threads and the renewer share it, one request at a time. With a factory each thread
    #   (and the renewer) opens its own, and a forked child opens new ones.
    # - +fence_record+: the ActiveRecord class whose database holds the fence (default ActiveRecord::Base). It must be
    #   the store's database: the fence checks the tokens the store issued.
    # - +clock+: the holders' clock, Float seconds (default the monotonic clock).
    # - +executor+: wraps each pass of the renewer (Rails.application.executor); nil for none.
    # - +error_handler+: called with (error, context) for the renewer's errors when Rails.error is not there.
    # - +renewal+: :background (a renewer thread per process) or :manual (Renewer#renew_due is called by hand).
    # - +jitter+: the fraction of renew_every the renewer's sleep varies by (0.1).
    # - +default_ttl+: the TTL of a +holds_lease+ that names none, Float seconds (a Duration is converted), at most
    #   Seconds::MAX; nil (the default) makes +ttl:+ required. Read when the job class declares its lease.
    #
    # A setter given a value it cannot use raises TypeError or ArgumentError, whatever the value (a BasicObject too).
    class Configuration
      MONOTONIC = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
      WARN = ->(error, context) { warn("lease_machines: #{context[:during]}: #{error.class}: #{error.message}") }
      RENEWALS = %i[background manual].freeze

      attr_reader :store, :fence_record, :clock, :executor, :error_handler, :renewal, :jitter, :default_ttl

      def initialize
        @store = nil
        @fence_record = nil
        @clock = MONOTONIC
        @executor = nil
        @error_handler = WARN
        @renewal = :background
        @jitter = 0.1
        @default_ttl = nil
      end

      def store=(store)
        unless nil.equal?(store) || Store === store || ResourceKey.responds?(store, :call)
          raise TypeError, "store must be a LeaseMachines::Store or a factory of them, got #{LeaseMachines.shown(store)}"
        end

        @store = store
      end

      def fence_record=(record)
        unless nil.equal?(record) || (Class === record && record.respond_to?(:with_connection))
          raise TypeError, "fence_record must be an ActiveRecord class, got #{LeaseMachines.shown(record)}"
        end

        @fence_record = record
      end

      def clock=(clock)
        @clock = responding(:clock, clock, :call)
      end

      def executor=(executor)
        @executor = nil.equal?(executor) ? nil : responding(:executor, executor, :wrap)
      end

      def error_handler=(handler)
        @error_handler = responding(:error_handler, handler, :call)
      end

      def renewal=(renewal)
        unless RENEWALS.include?(renewal)
          raise ArgumentError, "renewal must be :background or :manual, got #{LeaseMachines.shown(renewal)}"
        end

        @renewal = renewal
      end

      def jitter=(jitter)
        unless Float === jitter || Integer === jitter
          raise TypeError, "jitter must be Float, got #{LeaseMachines.shown(jitter)}"
        end
        raise ArgumentError, "jitter must be in 0...1, got #{jitter}" unless jitter >= 0 && jitter < 1

        @jitter = jitter.to_f
      end

      def default_ttl=(ttl)
        @default_ttl = nil.equal?(ttl) ? nil : Seconds.from(ttl, "default_ttl")
      end

      # The fence record in use: the configured one, else ActiveRecord::Base when ActiveRecord is loaded, else nil.
      def fence_record_in_use = @fence_record || (defined?(::ActiveRecord::Base) && ::ActiveRecord::Base) || nil

      # The fence record in use; ArgumentError when there is none.
      def fence_record!
        fence_record_in_use or
          raise(ArgumentError, "fenced writes need ActiveRecord (require \"active_record\") or a fence_record")
      end

      # Reports a background error: Rails.error when there is one, else the error handler. Never silent.
      def report(error, context)
        if defined?(::Rails) && ::Rails.respond_to?(:error) && ::Rails.error
          ::Rails.error.report(error, handled: true, source: "lease_machines", context: context)
        else
          @error_handler.call(error, context)
        end
      end

      private

      # +value+, when it responds to +method+; a TypeError naming the option +name+ otherwise.
      def responding(name, value, method)
        return value if ResourceKey.responds?(value, method)

        raise TypeError, "#{name} must respond to #{method}, got #{LeaseMachines.shown(value)}"
      end
    end
  end
end
