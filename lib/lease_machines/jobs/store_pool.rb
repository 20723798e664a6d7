# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Every Store the jobs use, in two kinds:
    #
    # - The lease store's (+with+): the configured store, to one request at a time. A Store given as is is one
    #   connection, shared behind a Mutex (Store allows one request at a time), in the process that configured it; in
    #   a forked child (Solid Queue's workers, Puma's, ...) it is opened again (Store#reopen), one per thread, as a
    #   factory is. A factory opens one Store per thread (and one for the renewer), and new ones in a forked child: a
    #   SQLite connection must not cross a fork.
    # - The fence's (+fence_store+): a Store on an ActiveRecord connection's own driver connection, for the fenced
    #   writes made on it, kept per driver connection (a weak map) so that it lives exactly as long as it. For a lease
    #   store on Redis, that Store is on Redis too, with a client of its own, and the driver connection as its fence.
    class StorePool
      def initialize(configuration)
        @configuration = configuration
        @lock = Thread::Mutex.new
        @fence_lock = Thread::Mutex.new
        @pid = @configured_in = Process.pid
        @stores = {}
        # Each driver connection's fence Store, and the RedisClient of a fence Store on Redis: weak keys, so that an
        # entry goes with its connection (Ruby 3.2, without WeakKeyMap: a WeakMap, which may drop an entry sooner;
        # the Store is then made again).
        @fences = defined?(ObjectSpace::WeakKeyMap) ? ObjectSpace::WeakKeyMap.new : ObjectSpace::WeakMap.new
      end

      # Yields a store for the current thread; +own:+ names a connection of its own (the renewer's).
      def with(own: nil, &)
        source = @configuration.store or
          raise ArgumentError, "no lease store: set LeaseMachines::Jobs.store = LeaseMachines::Store.new(path)"
        return yield store_for(own || Thread.current, source) unless source.is_a?(Store)
        return @lock.synchronize { yield source } if @configured_in == Process.pid

        # Opened before fork: its connection is the parent's. The child opens its own, per thread, as a factory would.
        unless source.reopenable?
          raise StoreError, "#{source.path}: this Store was opened before fork on a connection the application gave " \
                            "it, which is the parent's; set LeaseMachines::Jobs.store to a factory " \
                            "(-> { LeaseMachines::Store.new(...) })"
        end
        yield store_for(own || Thread.current, source.method(:reopen))
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

      # The fence's Store on an ActiveRecord +connection+ (created at its first fenced write, inside an open
      # transaction or not; Store.fence_for), deciding on +clock+ (nil: the PostgreSQL, MySQL or Redis server's clock,
      # as the lease store's own), with the leases' rows read from Redis when +redis+ (the lease store's
      # RedisClient::Config) is given. It changes nothing of the connection but, on SQLite, the busy timeout that
      # database.yml gives (+timeout+, milliseconds), which becomes sqlite3's busy_handler_timeout of the same length,
      # as Rails 8 sets it, because ActiveRecord 7.2's C busy timeout waits holding the GVL, and would stall the very
      # thread that holds the lock (another job's, the renewer's) until it runs out; and on PostgreSQL, whether its
      # statements are prepared, as the connection's own are (database.yml's prepared_statements). The Store is kept
      # per driver connection in a weak map (ObjectSpace::WeakKeyMap), so it lives exactly as long as that
      # connection. Raises ArgumentError for a connection to another database.
      def fence_store(connection, clock, redis = nil)
        raw = connection.raw_connection
        # A lock of its own: the pool's is held for a whole request of the lease store (which may wait for the very
        # transaction this fenced write joins).
        @fence_lock.synchronize do
          store, client = @fences[raw]
          # A clock may be nil: the server's.
          unless store && store.clock.equal?(clock) && same_redis?(store.redis_config, redis)
            # The Store itself is not closed: that would close +raw+, ActiveRecord's.
            client&.close
            store, client = fence(raw, clock, redis, busy_timeout(connection), prepared_statements(connection))
            @fences[raw] = [store, client]
          end
          store
        end
      end

      # The fence Store kept for the driver connection +raw+ and its own RedisClient (nil: none), or nil before its
      # first fenced write.
      def fence_of(raw) = @fence_lock.synchronize { @fences[raw] }

      private

      # A new fence Store on +raw+ (Store.fence_for), and the RedisClient of its own it was given (nil: none).
      def fence(raw, clock, config, busy_timeout, prepared_statements)
        client = config&.new_client
        [Store.fence_for(raw, clock: clock, redis: client, busy_timeout: busy_timeout,
                              prepared_statements: prepared_statements), client]
      rescue StandardError
        client&.close
        raise
      end

      # Whether two RedisClient::Configs (or nils) name the same server, database and user: each thread's lease store
      # has a client (and a config) of its own, and their jobs share the fence's Store on a connection.
      def same_redis?(one, other)
        return one.equal?(other) if one.nil? || other.nil?

        one.server_url == other.server_url && one.username == other.username && one.password == other.password
      end

      # Whether an ActiveRecord +connection+ runs prepared statements (database.yml's prepared_statements, true by
      # default on PostgreSQL): the fence's Store on it does as it does. nil where the adapter does not say.
      def prepared_statements(connection)
        connection.respond_to?(:prepared_statements?) ? connection.prepared_statements? : nil
      end

      # An ActiveRecord connection's configured busy timeout in Float seconds, or nil.
      def busy_timeout(connection)
        milliseconds = connection.pool.db_config.configuration_hash[:timeout]
        milliseconds && Integer(milliseconds) / 1000.0
      end

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

        raise TypeError, "the store factory returned #{LeaseMachines.shown(store)}, not a LeaseMachines::Store"
      end
    end
  end
end
