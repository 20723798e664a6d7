# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # What a job's body sees as +lease+: the lease it holds on +resource+ as +owner+, with its fencing +token+, and how
    # far to trust it, from the core's Holder on the holders' clock (deadlines counted from before each request was
    # sent). +state+ is :held, :at_risk or :lost. Nothing here interrupts the job: it asks (+check!+, +held?+) and
    # writes through the fence (+fenced+). Once its job has ended (the lease released, or left to run out), the lease
    # is :lost with reason :job_ended for every reader: +check!+ and +fenced+ raise LeaseLost, whichever thread asks.
    #
    # The renewer updates it from its own thread; every read and update holds the lease's lock.
    class JobLease
      attr_reader :job, :resource, :owner, :token, :cadence, :slot

      # +clock+ is the holders' clock; +store_clock+ the lease store's (the one its grants and fence are decided on);
      # +redis+ the lease store's RedisClient::Config when its leases are in Redis (Store#redis_config), else nil.
      def initialize(job:, resource:, lease:, sent_at:, cadence:, clock:, store_clock:, redis: nil)
        @job = job
        @resource = resource
        @owner = lease.owner
        @token = lease.token
        # The slot of a semaphore's lease (holds_lease limit:), nil for the plain lease.
        @slot = lease.respond_to?(:slot) ? lease.slot : nil
        @expires_at = lease.expires_at
        @cadence = cadence
        @clock = clock
        @store_clock = store_clock
        @redis = redis
        @holder = Holder.new(token: lease.token, at: sent_at, cadence: cadence)
        @lock = Thread::Mutex.new
        @reported = :held
        @reason = nil
        @finished = false
        @holding = nil
      end

      # When the authority's lease runs out, on the store's clock, as of the last grant or renewal.
      def expires_at = @lock.synchronize { @expires_at }

      # Why the lease was lost (the authority's refusal reason, :fenced, :job_ended), or nil.
      def reason = @lock.synchronize { @reason }

      # :held, :at_risk (past the Holder's warning deadline, or a renewal unconfirmed past it) or :lost (the
      # authority refused a renewal, the fence refused the token, or the job ended).
      def state = @lock.synchronize { state_at(@clock.call) }

      def held? = state == :held
      def at_risk? = state == :at_risk
      def lost? = state == :lost

      # Seconds until the Holder's warning deadline (0.0 once there, or lost).
      def remaining
        @lock.synchronize do
          deadline = @holder.warning_deadline
          deadline ? [deadline - @clock.call, 0.0].max : 0.0
        end
      end

      # The job's cooperative stop point: raises LeaseLost (a Lost, of this lease's job) unless the lease is held.
      def check!
        now, why = @lock.synchronize { [state_at(@clock.call), @reason] }
        raise Lost.new(job: job, resource: resource, token: token, state: now, reason: why) unless now == :held

        self
      end

      # Runs the block (given the ActiveRecord connection) as a write protected by this lease's token, in a transaction
      # on the fence record's database (joining one that is open): see FenceTransaction. Raises LeaseLost without
      # writing when the lease is known lost (its job ended included), LeaseMachines::Fenced when the fence refuses the
      # token (the whole transaction rolled back): a Lost and a Refused, of this lease's job, which its on_lost
      # handles. Instrumented as fenced_write around the write, with its +outcome+ (:written or :refused) and whether
      # the write's transaction +committed+.
      #
      # With a continuable job's +step+ (ActiveJob::Continuable, Rails 8.1: the step block's argument), the write
      # moves the step's cursor to +to+: saved in the same transaction under +holds_lease progress: :fenced+, and
      # set (+step.set!+, a checkpoint) once the write committed; a refused write moves neither (see Progress.fenced).
      def fenced(step = nil, to: nil, record: nil, &block)
        raise ArgumentError, "fenced needs a block: the write it protects" unless block
        if step
          raise ArgumentError, "fenced: record: is the fence record's own with a step" if record

          return Progress.fenced(self, step, to, &block)
        end
        raise ArgumentError, "fenced: to: is for a step's cursor (fenced(step, to: ...))" unless to.nil?

        record ||= Jobs.configuration.fence_record!
        unless Class === record && record.respond_to?(:with_connection)
          raise TypeError, "fenced: record: must be an ActiveRecord class, got #{LeaseMachines.shown(record)}"
        end

        check_not_lost!
        used = nil
        instrument(:fenced_write) do |payload|
          result = FenceTransaction.run(record, resource: resource, token: token, slot: slot || 0,
                                        clock: @store_clock, redis: @redis, payload: payload) do |connection|
            block.call(used = connection)
          end
          payload[:outcome] = :written
          holding(used)
          result
        rescue Fenced => e
          payload[:outcome] = :refused
          payload[:reason] = e.reason
          payload[:highest] = e.highest
          raise
        end
      rescue Fenced => e
        @lock.synchronize do
          @holder.fence
          @reason = :fenced
        end
        observe
        raise if Loss === e || e.resource != resource || e.token != token # not this lease's own refusal

        raise Refused.new(job: job, resource: resource, token: token, highest: e.highest, reason: e.reason)
      end

      def inspect = "#<#{self.class.name} #{resource} owner=#{owner} token=#{token} #{state}>"

      # Called by the renewer: when the Holder says a renewal is due, yields the renewal's request (a Hash of
      # Store#renew's keywords: resource, owner, token, ttl) to the block, which sends it and returns the Decision,
      # and reports what changed (renew, at_risk, lost). A StoreError the block raises is raised to the renewer after
      # the state is reported.
      def renew_if_due
        sent = @lock.synchronize do
          now = @clock.call
          next if @finished || !@holder.renewal_due?(now: now)

          now = @clock.call
          @holder.refresh(now: now)
          now
        end
        return observe unless sent

        begin
          decision = yield({ resource: resource, owner: owner, token: token, ttl: cadence.ttl, **in_slot })
        rescue StoreError
          observe
          raise
        end
        confirmed(decision, @clock.call)
      end

      # Whether a renewal is due now (an unconfirmed one is retried until confirmed or refused).
      def renewal_due? = @lock.synchronize { @holder.renewal_due?(now: @clock.call) }

      # The Holder's next renewal instant, on the holders' clock; nil once lost.
      def next_renewal = @lock.synchronize { @holder.next_renewal }

      # The job ended: the lease is :lost (reason :job_ended) for every reader, and nothing more is renewed or
      # reported (a renewal in flight when the lease was released is ignored, whatever the authority answered).
      def finish
        @lock.synchronize do
          @finished = true
          @reason = :job_ended
        end
      end

      def finished? = @lock.synchronize { @finished }

      # Emits at_risk or lost when the state moved there since last reported (nothing once finished).
      def observe
        return if finished?

        now = state
        previous = @lock.synchronize { @reported.tap { @reported = now } }
        return if now == previous || now == :held

        instrument(now, previous: previous, reason: reason, remaining: remaining)
      end

      # An ActiveRecord connection whose open transaction holds the lease's row (a fenced write joined it, on
      # PostgreSQL), or nil: a release must wait until that transaction ends.
      def holding_connection
        @lock.synchronize { @holding&.find { FenceTransaction.holds?(_1, resource) } }
      end

      def instrument(event, **extra, &)
        Instrumentation.instrument(event, job: job, resource: resource, owner: owner, token: token, slot: slot, **extra,
                                          &)
      end

      private

      # The slot: keyword of a semaphore's requests; none for the plain lease.
      def in_slot = slot ? { slot: slot } : {}

      def state_at(now)
        return :lost if @finished

        case @holder.state
        when :expired, :fenced then :lost
        else @holder.at_risk?(now: now) ? :at_risk : :held
        end
      end

      def confirmed(decision, received)
        return if finished?

        @lock.synchronize do
          if decision.renewed?
            @holder.confirm(token: decision.lease.token, at: received)
            @expires_at = decision.lease.expires_at
          else
            @holder.expire
            @reason = decision.reason
          end
        end
        if decision.renewed?
          instrument(:renew, status: decision.status, reason: decision.reason, expires_at: expires_at)
        end
        observe
      end

      # Keeps +connection+ when its open transaction holds the lease's row after a write (see #holding_connection).
      def holding(connection)
        return unless connection && FenceTransaction.holds?(connection, resource)

        @lock.synchronize { (@holding ||= []) << connection unless @holding&.include?(connection) }
      end

      def check_not_lost!
        lost, why = @lock.synchronize { [state_at(@clock.call) == :lost, @reason] }
        raise Lost.new(job: job, resource: resource, token: token, state: :lost, reason: why) if lost
      end
    end
  end
end
