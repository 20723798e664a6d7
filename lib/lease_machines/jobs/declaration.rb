# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # What a job class declared with +holds_lease+, checked once when the class is defined: the key proc, the group,
    # the renewal schedule (a Cadence, checked by the core: 0 < renew_every < ttl, warn_before < ttl), what to do
    # when another owner holds the lease, and what to do when the lease is lost while the job runs.
    #
    # - Seconds (+ttl+, +renew_every+, +warn_before+, +wait+, +lost_wait+) are a Duration or a number, positive and
    #   at most 2**63 (see Seconds).
    # - +on_conflict:+ (another owner holds the lease when the perform starts; nothing of the job ran): +:retry+ (the
    #   default: retry_on, again after +wait:+ seconds, default +renew_every+, for +attempts:+ retries, default 10,
    #   then LeaseBusy raised), +:discard+ (discard_on) or +:raise+.
    # - +on_lost:+ (the job's own lease was lost while it ran, and the job let the LeaseLost of JobLease#check! or
    #   JobLease#fenced, or the Fenced refusal of its write, out of its body): +:retry+ (the default: retry_on, the
    #   job enqueued again after +lost_wait:+ seconds, default +wait+, to run under a new lease, for +lost_attempts:+
    #   retries, default 3, then that exception raised), +:discard+ (discard_on) or +:raise+ (raised as it is). A job
    #   that rescues them itself and ends normally is done, whatever on_lost says.
    # - The group (the first part of the resource name, "GROUP:KEY") is +group:+, else the job's class name; it is
    #   converted to UTF-8. A subclass of the declaring class inherits its lease but is another job: it takes its
    #   leases in its own group, its own class name (a ChildJob's resource is "ChildJob:42", not "ParentJob:42", so
    #   the two do not exclude each other), unless the declaration gave +group:+, which every subclass then shares.
    #   An anonymous subclass, having no name of its own, uses the declaring class's group.
    # - +progress:+ where a continuable job's progress (ActiveJob::Continuable, Rails 8.1) is kept: +:job+ (the
    #   default: in the job's own data, as Continuable keeps it) or +:fenced+ (also in the application's database,
    #   saved only through the fence and read back under each new lease: see Progress). Either way a continuable job
    #   stops at its next checkpoint once its lease is not held.
    # - +limit:+ N (an Integer, 1 to MAX_LIMIT) lets up to N performs hold the resource at once, each in a slot of
    #   its own (Store#acquire's +limit:+), with its own token and fence; without it, one perform holds it (the
    #   plain lease, which is slot 0 of any limit).
    class Declaration
      CONFLICT_ACTIONS = %i[retry discard raise].freeze
      LOST_ACTIONS = CONFLICT_ACTIONS
      PROGRESS = %i[job fenced].freeze
      OPTIONS = %i[key ttl renew_every warn_before on_conflict wait attempts on_lost lost_wait lost_attempts progress
                   group limit].freeze
      # Retries of a lost lease, unless +lost_attempts:+ says: each one runs the job's work again.
      LOST_ATTEMPTS = 3

      attr_reader :key, :group, :cadence, :on_conflict, :wait, :attempts, :on_lost, :lost_wait, :lost_attempts,
                  :progress, :limit

      # Raises ArgumentError or TypeError, saying which option is wrong and why.
      def initialize(job_class, **options)
        unknown = options.keys - OPTIONS
        if unknown.any?
          raise ArgumentError, "holds_lease: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")}"
        end

        @key = key_proc(options.fetch(:key) do
          raise ArgumentError, "holds_lease: key: is required (a proc of the job's arguments)"
        end)
        @job_class = job_class
        @explicit_group = options.key?(:group)
        @group = group_name(options.fetch(:group) { job_class.name }, job_class)
        ttl = seconds(:ttl, options.fetch(:ttl) do
          Jobs.configuration.default_ttl or
            raise ArgumentError, "holds_lease: ttl: is required (or a default_ttl in the configuration)"
        end)
        renew_every = seconds(:renew_every, options.fetch(:renew_every, ttl / 3.0))
        warn_before = seconds(:warn_before, options.fetch(:warn_before, renew_every))
        @cadence = schedule(ttl, renew_every, warn_before)
        @on_conflict = action(:on_conflict, CONFLICT_ACTIONS, options, %i[wait attempts])
        @wait = seconds(:wait, options.fetch(:wait, renew_every))
        @attempts = count(:attempts, options.fetch(:attempts, 10))
        @on_lost = action(:on_lost, LOST_ACTIONS, options, %i[lost_wait lost_attempts])
        @lost_wait = seconds(:lost_wait, options.fetch(:lost_wait, @wait))
        @lost_attempts = count(:lost_attempts, options.fetch(:lost_attempts, LOST_ATTEMPTS))
        @limit = options.key?(:limit) ? limit_of(options[:limit]) : nil
        @progress = progress_of(options.fetch(:progress, :job))
        @subclasses = ObjectSpace::WeakMap.new
        freeze
      end

      def ttl = cadence.ttl

      # The declaration a perform of +job_class+ (the declaring class or a subclass of it) runs with: this one, or for
      # a named subclass when no +group:+ was given, the same declaration in the subclass's own group.
      def for_job_class(job_class)
        return self if @explicit_group || job_class.equal?(@job_class) || job_class.name.nil?

        @subclasses[job_class] ||= dup.__send__(:regroup, job_class)
      end

      private

      def regroup(job_class)
        @job_class = job_class
        @group = group_name(job_class.name, job_class)
        @subclasses = nil
        freeze
      end

      def key_proc(key)
        return key if ResourceKey.responds?(key, :call)

        raise TypeError, "holds_lease: key: must be a Proc or lambda of the job's arguments, got #{LeaseMachines.shown(key)}"
      end

      def group_name(group, job_class)
        if nil.equal?(group)
          raise ArgumentError, "holds_lease: group: must not be nil (omit it to use the class name)" if @explicit_group

          raise ArgumentError, "holds_lease: group: is required for an anonymous job class (#{job_class.inspect})"
        end
        unless String === group || Symbol === group
          raise TypeError, "holds_lease: group: must be a String or Symbol, got #{LeaseMachines.shown(group)}"
        end
        raise ArgumentError, "holds_lease: group: is empty" if group.empty?

        ResourceKey.utf8(group.to_s, "holds_lease: group: #{LeaseMachines.shown(group)}")
      end

      # The schedule, checked by the core; its ArgumentError said as every holds_lease error is.
      def schedule(ttl, renew_every, warn_before)
        Cadence.new(ttl: ttl, renew_every: renew_every, warn_before: warn_before)
      rescue ArgumentError => e
        raise ArgumentError, "holds_lease: #{e.message}"
      end

      def seconds(name, value) = Seconds.from(value, "holds_lease: #{name}:")

      # The action +options+ give as +name+ (:retry when they give none), one of +actions+; the options of its retries
      # (+retrying+) are refused beside any other action.
      def action(name, actions, options, retrying)
        action = options.fetch(name, :retry)
        unless actions.include?(action)
          raise ArgumentError,
                "holds_lease: #{name}: must be one of :#{actions.join(", :")}, got #{LeaseMachines.shown(action)}"
        end
        if action != :retry && retrying.any? { options.key?(_1) }
          options = retrying.map { "#{_1}:" }.join(" and ")
          raise ArgumentError, "holds_lease: #{options} apply to #{name}: :retry only, not :#{action}"
        end
        action
      end

      # +progress:+ :job or :fenced; :fenced needs ActiveJob::Continuable, and one holder of the key at a time (the
      # progress is the job's, saved under the key's lease).
      def progress_of(value)
        unless PROGRESS.include?(value)
          raise ArgumentError,
                "holds_lease: progress: must be one of :#{PROGRESS.join(", :")}, got #{LeaseMachines.shown(value)}"
        end
        return value if value == :job

        unless defined?(::ActiveJob::Continuable)
          raise ArgumentError, "holds_lease: progress: :fenced is for ActiveJob::Continuable jobs, and ActiveJob " \
                               "#{::ActiveJob.version} has none (Rails 8.1 has)"
        end
        return value unless @limit

        raise ArgumentError, "holds_lease: progress: :fenced needs one holder of the key at a time, not limit:"
      end

      # +limit:+, the most performs that hold the resource's lease at once: an Integer from 1 to MAX_LIMIT, checked
      # natively as Store#acquire checks it.
      def limit_of(value)
        LeaseMachines.__send__(:_limit, value)
      rescue TypeError, ArgumentError => e
        raise e.class, "holds_lease: #{e.message.sub(/\Alimit /, "limit: ")}"
      end

      def count(name, value)
        unless Integer === value
          raise TypeError, "holds_lease: #{name}: must be an Integer, got #{LeaseMachines.shown(value)}"
        end
        raise ArgumentError, "holds_lease: #{name}: must be at least 1, got #{value}" unless value >= 1

        value
      end
    end
  end
end
