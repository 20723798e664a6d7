# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # Hands out the configured store to one request at a time. A Store given as is is one connection, shared behind
    # a Mutex (Store allows one request at a time), and only in the process that configured it. A factory opens one
    # Store per thread (and one for the renewer), and new ones in a forked child: a SQLite connection must not cross
    # a fork.
    class StorePool
      def initialize(configuration)
        @configuration = configuration
        @lock = Thread::Mutex.new
        @pid = @configured_in = Process.pid
        @stores = {}
      end

      # Yields a store for the current thread; +own:+ names a connection of its own (the renewer's).
      def with(own: nil, &)
        source = @configuration.store or
          raise ArgumentError, "no lease store: set LeaseMachines::ActiveJob.store = LeaseMachines::Store.new(path)"
        return yield store_for(own || Thread.current, source) unless source.is_a?(Store)

        if @configured_in != Process.pid
          raise StoreError, "#{source.path}: this Store was opened before fork and its connection is the parent's; " \
                            "set LeaseMachines::ActiveJob.store to a factory (-> { LeaseMachines::Store.new(path) })"
        end
        @lock.synchronize { yield source }
      end

      # Closes every store the factory opened: the configuration changes.
      def reset
        stores = @lock.synchronize do
          @configured_in = @pid = Process.pid
          @stores.values.tap { @stores = {} }
        end
        stores.each(&:close)
      end

      # In a forked child: forgets the parent's stores without closing them (they are the parent's connections).
      def after_fork
        @lock.synchronize do
          @stores = {}
          @pid = Process.pid
        end
      end

      private

      def store_for(owner, factory)
        after_fork if @pid != Process.pid
        @lock.synchronize do
          @stores.fetch(owner) do
            close_finished # only when a store is opened: a request on a thread's own store allocates nothing here
            @stores[owner] = opened(factory.call)
          end
        end
      end

      # A finished thread's connection is closed here, not left to the garbage collector.
      def close_finished
        @stores.delete_if do |thread, store|
          next false unless thread.is_a?(Thread) && !thread.alive?

          store.close
          true
        end
      end

      def opened(store)
        return store if store.is_a?(Store)

        raise TypeError, "the store factory returned #{Store.shown(store)}, not a LeaseMachines::Store"
      end
    end
  end
end
