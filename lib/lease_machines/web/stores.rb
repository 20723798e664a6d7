# frozen_string_literal: true

module LeaseMachines
  class Web
    # Where a request's store comes from, as the source says:
    #
    # - a Store: one connection, taken by one request at a time behind a Mutex (a Store must be used by one thread at
    #   a time), in the process that opened it; a forked child opens it again (Store#reopen), one per server thread
    #   (a connection must not cross a fork);
    # - a factory (anything with +call+): one Store per server thread, opened at the thread's first request and
    #   closed once the thread has finished (at the next opening) or by #close; a forked child opens its own;
    # - LeaseMachines::Jobs.pool (the default in a Rails application): the jobs' own stores, one request at a time.
    #
    # A request reads what it needs inside #with and renders outside it, so the lock is held for the reads only.
    class Stores
      def initialize(source)
        @source = source
        @lock = Thread::Mutex.new
        @pid = @opened_in = Process.pid
        @opened = {}
      end

      # Yields the store of this request and returns the block's value. Raises StoreError when the factory cannot
      # open one or a shared Store crossed a fork, TypeError when the factory returns something else than a Store.
      def with(&)
        return @source.with(&) if Stores.pool?(@source)
        return yield thread_store(@source) unless Store === @source
        return @lock.synchronize { yield @source } if @opened_in == Process.pid

        # Opened before fork (a preforking server): the child opens its own, per thread, as a factory would.
        unless @source.reopenable?
          raise StoreError, "#{@source.path}: this Store was opened before fork on a connection the application " \
                            "gave it, which is the parent's; give the dashboard a factory " \
                            "(-> { LeaseMachines::Store.new(...) }) instead"
        end
        yield thread_store(@source.method(:reopen))
      end

      # Closes every store the factory opened (none for a Store or the jobs' pool, which their owners close).
      def close
        stores = @lock.synchronize { @opened.values.tap { @opened = {} } }
        stores.each(&:close)
        nil
      end

      # Whether +source+ is the jobs' StorePool (lib/lease_machines/jobs, loaded or not).
      def self.pool?(source) = defined?(Jobs::StorePool) ? Jobs::StorePool === source : false

      private

      # This thread's store from +factory+, opened at its first request.
      def thread_store(factory)
        @lock.synchronize do
          forget_parents if @pid != Process.pid
          @opened.fetch(Thread.current) do
            close_finished
            @opened[Thread.current] = opened(factory.call)
          end
        end
      end

      # In a forked child the parent's stores are the parent's connections: forgotten, not closed.
      def forget_parents
        @opened = {}
        @pid = Process.pid
      end

      # The stores of threads that have finished (a WEBrick connection's, a Puma thread that was reaped).
      def close_finished
        @opened.delete_if do |thread, store|
          next false if thread.alive?

          store.close
          true
        end
      end

      def opened(store)
        return store if Store === store

        raise TypeError, "the dashboard's store factory returned #{LeaseMachines.shown(store)}, not a " \
                         "LeaseMachines::Store"
      end
    end
  end
end
