# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # The one renewer of a process: renews every held lease on its cadence through a store connection of its own,
    # on a background thread (or by hand: +renewal: :manual+ and #renew_due). It sleeps until the earliest renewal any
    # lease's Holder asks for, shortened by up to +jitter+ of it so that processes started together spread out. After
    # fork the child starts without the parent's leases and thread.
    #
    # Its errors are reported (Rails.error, else the error handler) and emitted as thread_error, and never stop it:
    # a failing store or store factory, an error of any class but the FATAL ones (a factory's LoadError, an Exception
    # subclass of its own), an error handler or subscriber that raises (warned about on stderr). Only a FATAL error
    # (an interrupt, exit, NoMemoryError), Thread#kill or #stop ends the thread; #stop always returns, and the next
    # register starts a new thread.
    #
    # Failures back off: a failed renewal is retried after a tenth of the lease's renew_every, doubled for each
    # failed pass in a row, at most renew_every and never sooner than MIN_RETRY; a pass that failed as a whole (the
    # executor raised) after PASS_RETRY, doubled the same way up to MAX_PASS_RETRY. A pass without errors ends it.
    #
    # A Thread, Mutex and ConditionVariable of its own, not concurrent-ruby's executors (there with ActiveSupport):
    # their timers fire at a fixed rate, where this wait is the next renewal due, cut short by a register.
    class Renewer
      # What the renewer does not survive: an interrupt (every SignalException, as Thread#raise delivers one to stop a
      # thread), exit, NoMemoryError. Thread#kill raises nothing, and always stops it.
      FATAL = [SignalException, SystemExit, NoMemoryError].freeze
      # The shortest wait after a failure, in seconds.
      MIN_RETRY = 0.1
      # The first wait after a pass that failed as a whole, and the longest, in seconds.
      PASS_RETRY = 1.0
      MAX_PASS_RETRY = 30.0
      # Backoffs stop doubling after this many failed passes in a row.
      MAX_DOUBLINGS = 16

      def initialize(configuration, pool)
        @configuration = configuration
        @pool = pool
        @lock = Thread::Mutex.new
        @wake = Thread::ConditionVariable.new
        @leases = []
        @thread = nil
        @stopping = false
        @failures = 0
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

      # Stops renewing +lease+ (its job ended). Without leases, the backoff of failed passes starts over.
      def unregister(lease)
        @lock.synchronize do
          @leases.delete(lease)
          @failures = 0 if @leases.empty?
        end
      end

      def leases = @lock.synchronize { @leases.dup }

      def running? = @lock.synchronize { @thread&.alive? || false }

      # One pass: renews each lease whose renewal is due (through the renewer's own store connection, when the store
      # is a factory; the shared one otherwise), reports each error. Returns the seconds until the next renewal any
      # lease asks for, backed off after failures (nil without leases).
      def renew_due
        failed_any = false
        wrap do
          leases.each do |lease|
            lease.renew_if_due { |request| @pool.with(own: self) { _1.renew(**request) } }
          rescue *FATAL
            raise
          rescue Exception => e # all but FATAL (re-raised above)
            failed_any = true
            failed(e, lease)
          end
        end
        @lock.synchronize { @failures = failed_any ? @failures + 1 : 0 }
        next_wait
      end

      # Stops the thread (it is started again by the next register). Returns once it ended, whatever it ended with
      # (an exception it died of was reported when it did); called from the thread itself (a subscriber), at once,
      # the thread ending after its pass. Only an exception raised into the caller while it waits (an interrupt)
      # leaves the thread running, and is raised.
      def stop
        thread = @lock.synchronize do
          @stopping = true
          @wake.signal
          @thread
        end
        return if thread.equal?(Thread.current)

        begin
          thread&.join
        rescue Exception # the thread's own death, unless it still runs
          raise unless thread.status.nil?
        ensure
          @lock.synchronize do
            @stopping = false
            @failures = 0
            @thread = nil unless @thread&.alive?
          end
        end
        nil
      end

      # In a forked child: forget the parent's leases (their jobs run in the parent) and its thread (gone).
      def after_fork = @lock.synchronize { forked! }

      private

      # How many passes in a row failed (0 after a pass without errors).
      def failures = @lock.synchronize { @failures }

      def forked!
        @leases = []
        @thread = nil
        @failures = 0
        @pid = Process.pid
      end

      def start
        return if @thread&.alive?

        # A thread inherits its creator's interrupt mask, and register runs where a job defers interrupts: the
        # renewer's own are immediate, so that Thread#kill and Thread#raise reach it.
        @stopping = false # a stop asked from the thread that ended
        @thread = Thread.new { Thread.handle_interrupt(Object => :immediate) { run } }
        @thread.name = "lease_machines renewer"
        @thread.report_on_exception = true
      end

      def run
        until @lock.synchronize { @stopping || @configuration.renewal != :background }
          wait = begin
            renew_due
          rescue *FATAL
            raise
          rescue Exception => e # all but FATAL (re-raised above)
            failed(e, nil)
            pass_failed
          end
          @lock.synchronize do
            @wake.wait(@lock, wait.nil? ? nil : jittered(wait)) unless @stopping
          end
        end
      end

      def next_wait
        now = @configuration.clock.call
        waits = leases.filter_map do |lease|
          if lease.renewal_due?
            every = lease.cadence.renew_every
            backoff(every / 10.0, every)
          elsif (at = lease.next_renewal)
            [at - now, 0.0].max
          end
        end
        waits.min
      end

      # A pass that raised as a whole: counted as a failure, retried after its backoff.
      def pass_failed
        @lock.synchronize { @failures += 1 }
        backoff(PASS_RETRY, MAX_PASS_RETRY)
      end

      # +first+ doubled for each failed pass in a row after the first, at most +longest+, at least MIN_RETRY.
      def backoff(first, longest)
        doublings = (failures - 1).clamp(0, MAX_DOUBLINGS)
        [[first * (2**doublings), longest].min, MIN_RETRY].max
      end

      def jittered(wait) = wait * (1.0 - (rand * @configuration.jitter))

      def wrap(&)
        executor = @configuration.executor
        executor ? executor.wrap(&) : yield
      end

      # Reports +error+, emits thread_error and the lease's change of state, if any. Never raises (but FATAL ones).
      def failed(error, lease)
        context = { during: "renewal", resource: lease&.resource, token: lease&.token }
        reporting(error) { @configuration.report(error, context) }
        reporting(error) do
          Instrumentation.instrument(:thread_error, job: lease&.job, resource: lease&.resource, owner: lease&.owner,
                                                    token: lease&.token, slot: lease&.slot, error: error)
        end
        reporting(error) { lease.observe } if lease
      end

      def reporting(error, &) = Renewer.reporting("renewal", error, &)

      # Runs the block (a report of +error+, during +during+: the error handler, Rails.error, subscribers): what it
      # raises is warned about on stderr, never raised (into the renewer, over a job's outcome), but FATAL errors.
      def self.reporting(during, error)
        yield
      rescue *FATAL
        raise
      rescue Exception => e # all but FATAL (re-raised above)
        begin
          warn("lease_machines: #{during}: reporting #{error.class} (#{error.message}) raised #{e.class}: #{e.message}")
        rescue StandardError
          nil # stderr is gone: nothing is left to tell
        end
      end
    end
  end
end
