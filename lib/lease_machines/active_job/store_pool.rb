# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # Hands out the configured store to one request at a time. A Store given as is is one connection, shared behind
    # a Mutex (Store allows one request at a time). A factory opens one Store per thread, and new ones in a forked
    # child (a SQLite connection must not cross a fork).
    class StorePool
      def initialize(configuration)
        @configuration = configuration
        @lock = Thread::Mutex.new
        @pid = Process.pid
        @stores = {}
      end

      # Yields a store for the current thread; +own:+ names a connection of its own (the renewer's).
      def with(own: nil, &)
        source = @configuration.store or
          raise ArgumentError, "no lease store: set LeaseMachines::ActiveJob.store = LeaseMachines::Store.new(path)"
        return @lock.synchronize { yield source } if source.is_a?(Store)

        yield store_for(own || Thread.current, source)
      end

      # Forgets every store (after fork, in the child, or when the configuration changes), closing them unless
      # +close+ is false (a child must not close its parent's connections).
      def reset(close: true)
        stores = @lock.synchronize do
          taken = @stores.values
          @stores = {}
          @pid = Process.pid
          taken
        end
        stores.each(&:close) if close
      end

      private

      def store_for(owner, factory)
        reset(close: false) if @pid != Process.pid
        @lock.synchronize do
          # A finished thread's connection is closed here, not left to the garbage collector.
          @stores.select { |thread, _| thread.is_a?(Thread) && !thread.alive? }.each do |thread, store|
            @stores.delete(thread)
            store.close
          end
          @stores[owner] ||= begin
            store = factory.call
            raise TypeError, "the store factory returned #{Store.shown(store)}, not a LeaseMachines::Store" unless store.is_a?(Store)

            store
          end
        end
      end
    end
  end
end
