# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # The one renewer of a process: renews every held lease on its cadence through a store connection of its own,
    # on a background thread (or by hand: +renewal: :manual+ and #renew_due). It sleeps until the earliest renewal any
    # lease's Holder asks for, shortened by up to +jitter+ of it so that processes started together spread out; a
    # failed renewal is retried after a tenth of that lease's renew_every. After fork the child starts without the
    # parent's leases and thread. Its errors are reported (Rails.error, else the error handler) and emitted as
    # thread_error; they never stop it.
    class Renewer
      def initialize(configuration, pool)
        @configuration = configuration
        @pool = pool
        @lock = Thread::Mutex.new
        @wake = Thread::ConditionVariable.new
        @leases = []
        @thread = nil
        @pid = Process.pid
      end

      # Starts renewing +lease+ (and the thread, when renewals are in the background).
      def register(lease)
        @lock.synchronize do
          forked! if @pid != Process.pid
          @leases << lease
          start if @configuration.renewal == :background
          @wake.signal
        end
      end

      # Stops renewing +lease+ (its job ended).
      def unregister(lease)
        @lock.synchronize { @leases.delete(lease) }
      end

      def leases = @lock.synchronize { @leases.dup }

      def running? = @lock.synchronize { @thread&.alive? || false }

      # One pass: renews each lease whose renewal is due, reports each error. Returns the seconds until the next
      # renewal any lease asks for (nil without leases).
      def renew_due
        wrap do
          leases.each do |lease|
            lease.renew_if_due(own_store_pool)
          rescue StandardError => e
            failed(e, lease)
          end
        end
        next_wait
      end

      # Stops the thread (it is started again by the next register).
      def stop
        thread = @lock.synchronize do
          @stopping = true
          @wake.signal
          @thread
        end
        thread&.join
        @lock.synchronize { @stopping = false; @thread = nil }
      end

      # In a forked child: forget the parent's leases (their jobs run in the parent) and its thread (gone).
      def after_fork = @lock.synchronize { forked! }

      private

      def forked!
        @leases = []
        @thread = nil
        @pid = Process.pid
      end

      # The renewer's own connection, when the store is a factory; the shared one otherwise.
      def own_store_pool = RenewerStore.new(@pool, self)

      def start
        return if @thread&.alive?

        @thread = Thread.new { run }
        @thread.name = "lease_machines renewer"
        @thread.report_on_exception = true
      end

      def run
        until @lock.synchronize { @stopping || @configuration.renewal != :background }
          wait = begin
            renew_due
          rescue StandardError => e
            failed(e, nil)
            1.0
          end
          @lock.synchronize do
            break if @stopping

            @wake.wait(@lock, wait.nil? ? nil : jittered(wait))
          end
        end
      end

      def next_wait
        now = @configuration.clock.call
        waits = leases.filter_map do |lease|
          if lease.renewal_due?
            lease.cadence.renew_every / 10.0
          elsif (at = lease.next_renewal)
            [at - now, 0.0].max
          end
        end
        waits.min
      end

      def jittered(wait) = wait * (1.0 - (rand * @configuration.jitter))

      def wrap(&)
        executor = @configuration.executor
        executor ? executor.wrap(&) : yield
      end

      def failed(error, lease)
        @configuration.report(error, { during: "renewal", resource: lease&.resource, token: lease&.token })
        Instrumentation.instrument(:thread_error, job: lease&.job, resource: lease&.resource, owner: lease&.owner,
                                                  token: lease&.token, error: error)
      end
    end

    # The store the renewer renews through: its own connection (the pool's store for the renewer).
    class RenewerStore
      def initialize(pool, renewer)
        @pool = pool
        @renewer = renewer
      end

      def renew(**request) = @pool.with(own: @renewer) { _1.renew(**request) }
    end
  end
end
