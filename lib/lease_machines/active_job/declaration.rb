# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # What a job class declared with +holds_lease+, checked once when the class is defined: the key proc, the group,
    # the renewal schedule (a Cadence, checked by the core: 0 < renew_every < ttl, warn_before < ttl) and what to do
    # when another owner holds the lease.
    class Declaration
      CONFLICT_ACTIONS = %i[retry discard raise].freeze
      OPTIONS = %i[key ttl renew_every warn_before on_conflict wait attempts group].freeze

      attr_reader :key, :group, :cadence, :on_conflict, :wait, :attempts

      # Raises ArgumentError or TypeError, saying which option is wrong and why.
      def initialize(job_class, **options)
        unknown = options.keys - OPTIONS
        if unknown.any?
          raise ArgumentError, "holds_lease: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")}"
        end

        @key = key_proc(options.fetch(:key) do
          raise ArgumentError, "holds_lease: key: is required (a proc of the job's arguments)"
        end)
        @group = group_name(options.fetch(:group, job_class.name), job_class)
        ttl = seconds(:ttl, options.fetch(:ttl) do
          ActiveJob.configuration.default_ttl or
            raise ArgumentError, "holds_lease: ttl: is required (or a default_ttl in the configuration)"
        end)
        renew_every = seconds(:renew_every, options.fetch(:renew_every, ttl / 3.0))
        warn_before = seconds(:warn_before, options.fetch(:warn_before, renew_every))
        @cadence = Cadence.new(ttl: ttl, renew_every: renew_every, warn_before: warn_before)
        @on_conflict = conflict_action(options.fetch(:on_conflict, :retry))
        if @on_conflict != :retry && (options.key?(:wait) || options.key?(:attempts))
          raise ArgumentError,
                "holds_lease: wait: and attempts: apply to on_conflict: :retry only, not :#{@on_conflict}"
        end
        @wait = seconds(:wait, options.fetch(:wait, renew_every))
        @attempts = count(:attempts, options.fetch(:attempts, 10))
        freeze
      end

      def ttl = cadence.ttl

      private

      def key_proc(key)
        return key if key.respond_to?(:call)

        raise TypeError, "holds_lease: key: must be a Proc or lambda of the job's arguments, got #{Store.shown(key)}"
      end

      def group_name(group, job_class)
        if group.nil?
          raise ArgumentError, "holds_lease: group: is required for an anonymous job class (#{job_class.inspect})"
        end
        unless group.is_a?(String) || group.is_a?(Symbol)
          raise TypeError, "holds_lease: group: must be a String or Symbol, got #{Store.shown(group)}"
        end
        raise ArgumentError, "holds_lease: group: is empty" if group.empty?

        group.to_s
      end

      # An ActiveSupport::Duration (30.seconds) or a number of seconds, as Float seconds.
      def seconds(name, value)
        value = value.to_f if defined?(ActiveSupport::Duration) && value.is_a?(ActiveSupport::Duration)
        unless value.is_a?(Integer) || value.is_a?(Float)
          raise TypeError, "holds_lease: #{name}: must be a Duration or Float seconds, got #{Store.shown(value)}"
        end
        unless value.positive? && value.to_f.finite?
          raise ArgumentError, "holds_lease: #{name}: must be positive and finite, got #{value}"
        end

        value.to_f
      end

      def conflict_action(action)
        return action if CONFLICT_ACTIONS.include?(action)

        raise ArgumentError,
              "holds_lease: on_conflict: must be one of :#{CONFLICT_ACTIONS.join(", :")}, got #{Store.shown(action)}"
      end

      def count(name, value)
        unless value.is_a?(Integer)
          raise TypeError, "holds_lease: #{name}: must be an Integer, got #{Store.shown(value)}"
        end
        raise ArgumentError, "holds_lease: #{name}: must be at least 1, got #{value}" unless value >= 1

        value
      end
    end
  end
end
