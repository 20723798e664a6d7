# frozen_string_literal: true

require "weakref"

module LeaseMachines
  class Store
    # The claim protocol: which fiber is inside a request of a Store, so that interrupts, threads, fibers and a
    # signal's trap handler can never split a request or reuse a connection left half-way. Included in Store.
    #
    # The claim holds the fiber inside a request (a WeakRef, so that a fiber abandoned inside the block of #fenced
    # can be collected and its transaction rolled back; nil between requests), whether the request runs in the
    # store's own transaction (:own) or the application's (:joined), whether it is running the block of #fenced or
    # deciding (its clock may call back in), and how many fenced savepoints are open. It is read and written with
    # interrupts deferred, under the guard.
    module Claim
      private

      def initialize_claim
        @claim = @claim_kind = nil
        @in_block = @deciding = false
        @depth = 0
        # Makes checking and taking the claim one step between threads.
        @guard = Thread::Mutex.new
      end

      # Runs the block with every asynchronous exception deferred until it has returned or raised.
      def critical(&) = Thread.handle_interrupt(Object => :never, &)

      # Runs the block holding the guard, which makes checking and taking the claim one step between threads.
      def guarded(&)
        @guard.synchronize(&)
      rescue ThreadError => e
        raise StoreError, "#{path}: the store cannot be used from here (#{e.message}; a signal's trap handler?)"
      end

      # Claims the store for the current fiber: +:own+ for a request in the store's own transaction (which the
      # adapter then opens, marked as the store's), +:joined+ for one inside the application's. The claim is made
      # before BEGIN, so that an exception landing right after it (a signal's trap handler, which
      # Thread.handle_interrupt does not defer) leaves a claim the next request clears, rolling back only a
      # transaction marked as the store's. Called with the guard held.
      def take(kind)
        @claim = WeakRef.new(Fiber.current)
        @claim_kind = kind
      end

      # Ends the claim: rolls back the store's own transaction unless it +committed+, and forgets the request's state.
      def end_claim(committed:)
        @deciding = @in_block = false
        @adapter.rollback_own if @claim_kind == :own && !committed
        @claim = @claim_kind = nil
      end

      def ended_by_block!
        raise StoreError, "#{path}: the block of fenced ended the store's transaction (a COMMIT, ROLLBACK or " \
                          "RELEASE in it); its writes may have been made outside the fence"
      end

      # Clears a claim its fiber can no longer end (the fiber died inside a request, or an exception landed where no
      # ensure could run), rolling back the store's own transaction if that is what is open (never the
      # application's). Raises StoreError while another live fiber is inside a request, or when this fiber's
      # request calls back in while deciding (from its clock). Lets this fiber's own fenced block call back in.
      # Called with the guard held.
      def recover
        raise StoreError, "#{path}: the store is closed" if @adapter.closed?

        @adapter.check!
        claim = @claim
        return if claim.nil?

        fiber = begin
          claim.__getobj__
        rescue WeakRef::RefError
          nil
        end
        if fiber.equal?(Fiber.current)
          return if @in_block
          if @deciding
            raise StoreError, "#{path}: the store was called from inside one of its own requests (by its clock?)"
          end
        elsif fiber&.alive?
          raise StoreError, "#{path}: another thread or fiber is inside a request of this store; " \
                            "open one Store per thread"
        end

        end_claim(committed: false)
        @depth = 0
      end
    end
  end
end
