# frozen_string_literal: true

require "securerandom"

module Bench
  module Stores
    module_function

    # Prepends to +klass+ a method for each of +names+ that runs +around+ (given the name and, as its block, the
    # original call).
    def wrap(klass, names, &around)
      klass.prepend(Module.new do
        names.each do |name|
          define_method(name) { |*args, **options, &block| around.call(name) { super(*args, **options, &block) } }
        end
      end)
    end

    # The owner every lock below is held by, its TTL, and the name of the resource (each lock adds its own suffix).
    OWNER = 1
    TTL = 30.0

    # Counts the calls an object makes that wait for its server's answer: one round trip each (a pipeline's sync
    # is one, whatever it carries).
    class RoundTrips
      # PG::Connection's waiting methods (#exec and #query are aliases that a singleton's #async_exec does not see;
      # #send_query is a simple query, whose results are then read).
      PG = %i[exec query send_query async_exec sync_exec exec_params async_exec_params sync_exec_params exec_prepared
              async_exec_prepared sync_exec_prepared prepare async_prepare sync_prepare pipeline_sync].freeze
      # Mysql2::Client's (a query's later results, #next_result, come in the same round trip).
      MYSQL = %i[query prepare ping set_server_option].freeze
      REDIS = %i[call call_v call_once call_once_v blocking_call blocking_call_v pipelined multi].freeze

      attr_accessor :count

      def initialize(object, methods)
        @count = 0
        Stores.wrap(object.singleton_class, methods) do |_, &call|
          @count += 1
          call.call
        end
      end
    end

    # What every lock answers: its row's description, and one lock cycle (acquire, then release) or one renewal of
    # a lock it holds, each true when it took the path it is meant to (granted, released, renewed).
    class Lock
      attr_reader :round_trips

      def renews? = true
      def durable? = true
      def fences? = false
      def close; end

      # The PG::Connection of this lock's client, for the server's statistics (nil: not PostgreSQL).
      def pg_connection = nil

      # The SQLite3::Database of this lock (nil: not SQLite).
      def sqlite_connection = nil

      # The Mysql2::Client of this lock's client, for the server's statistics (nil: not MySQL).
      def mysql_connection = nil

      # The connection to a server this lock decides on (nil: in process).
      def server_connection = pg_connection || mysql_connection
    end

    # LeaseMachines::Store: a durable lease with a fencing token, one transaction per decision (+options+: the
    # store's, such as a Redis store's fence:). On Redis, +database+ is a RedisClient of the benchmark's, whose calls
    # are counted; the lease is as durable as the server's tier, and fenced only with a fence.
    class StoreLock < Lock
      # +commit: :watch+ swaps the Redis store's compare-and-set script for WatchCommit's WATCH / MULTI / EXEC.
      def initialize(database, resource:, commit: :script, **options)
        super()
        @store = LeaseMachines::Store.new(database, **options)
        @store.instance_variable_get(:@adapter).extend(WatchCommit) if commit == :watch
        @resource = resource
        @renewed = "#{resource}/renewed"
        @token = @store.acquire(resource: @renewed, owner: OWNER, ttl: TTL).lease.token
        @round_trips = RoundTrips.new(pg_connection, RoundTrips::PG) if pg_connection
        @round_trips = RoundTrips.new(database, RoundTrips::REDIS) if redis?
        @round_trips = RoundTrips.new(mysql_connection, RoundTrips::MYSQL) if mysql_connection
        @fenced = !redis? || options.key?(:fence)
      end

      attr_reader :store

      def redis? = @store.adapter_name == :redis
      def durable? = !redis? || @store.durability.tier == :aof_always
      def fences? = @fenced
      def pg_connection = @store.adapter_name == :postgresql ? @store.database : nil
      def sqlite_connection = @store.adapter_name == :sqlite ? @store.database : nil
      def mysql_connection = @store.adapter_name == :mysql ? @store.database : nil

      def cycle
        decision = @store.acquire(resource: @resource, owner: OWNER, ttl: TTL)
        decision.granted? && @store.release(resource: @resource, owner: OWNER, token: decision.lease.token).released?
      end

      def renew = @store.renew(resource: @renewed, owner: OWNER, token: @token, ttl: TTL).renewed?

      # How many accepted changes (committed writes) the two resources' rows have seen.
      def revisions = @store.revision(resource: @resource) + @store.revision(resource: @renewed)

      def close = @store.close
    end

    # LeaseMachines::Store on Redis as two processes deciding on one lease in turn: two stores, each on a client of
    # its own (+database+ and +second+), the same owner; every decision follows the other store's, so that no store
    # finds the row as its own last commit left it: the compare-and-set answers the row as it is now, and the
    # decision is made again on it (two round trips), as when several workers share a lease.
    class TakingTurnsLock < StoreLock
      # The round trips of both stores' clients, counted together.
      Both = Struct.new(:first, :second) do
        def count = first.count + second.count

        def count=(value)
          first.count = second.count = value
        end
      end

      def initialize(database, second, resource:, **options)
        super(database, resource: resource, **options)
        @other = LeaseMachines::Store.new(second, **options)
        @round_trips = Both.new(@round_trips, RoundTrips.new(second, RoundTrips::REDIS))
        @turn = false
      end

      def cycle
        decision = @store.acquire(resource: @resource, owner: OWNER, ttl: TTL)
        decision.granted? && @other.release(resource: @resource, owner: OWNER, token: decision.lease.token).released?
      end

      def renew
        @turn = !@turn
        (@turn ? @other : @store).renew(resource: @renewed, owner: OWNER, token: @token, ttl: TTL).renewed?
      end

      def close
        super
        @other.close
      end
    end

    # The Redis store's commit script alone, a floor of its decisions: the COMMIT of each decision of a lock cycle
    # and of a renewal (EVALSHA with the keys and arguments a Store sent for it, captured once), sent again and again
    # with the resource's stamp as it finds it and leaves it, and no instant to check: no read, no decision, none of
    # the store's Ruby around it. It writes what the store writes (the row, the event into the stream, its pruning,
    # the index), in one round trip.
    class CommitScriptLock < Lock
      def initialize(client, resource:)
        super()
        @client = client
        sent = []
        store = LeaseMachines::Store.new(client)
        store.instance_variable_get(:@adapter).singleton_class.prepend(Module.new do
          define_method(:commit_round_trip) do |command, script, keys, args|
            sent << [keys, args.dup]
            super(command, script, keys, args)
          end
        end)
        renewed = "#{resource}/renewed"
        token = store.acquire(resource: resource, owner: OWNER, ttl: TTL).lease.token
        store.release(resource: resource, owner: OWNER, token: token)
        token = store.acquire(resource: renewed, owner: OWNER, ttl: TTL).lease.token
        store.renew(resource: renewed, owner: OWNER, token: token, ttl: TTL)
        store.close
        @sha = client.call("SCRIPT", "LOAD", LeaseMachines::Store::Redis.const_get(:COMMIT))
        @acquire, @release, _, @renew = sent.last(4).map { |keys, args| replayed(keys, args) }
        @round_trips = RoundTrips.new(client, RoundTrips::REDIS)
      end

      def cycle = commit(@acquire) && commit(@release)
      def renew = commit(@renew)
      def durable? = false

      private

      # The command that commits +args+ on +keys+ again: its stamp the resource's now, left as it is, no instant.
      def replayed(keys, args)
        stamp = @client.call("HGET", keys[0], "stamp")
        args = args.dup
        args[0] = args[1] = stamp
        args[6] = ""
        ["EVALSHA", @sha, keys.size, *keys, *args]
      end

      def commit(command) = Integer === @client.call_v(command).first
    end

    # The other way a Redis store could commit its decisions, measured beside the one it ships (a compare-and-set
    # script), the same decision deciding both: the read WATCHes the resource's row and its event stream, then reads
    # them with the server's TIME (one round trip, no MULTI: the WATCH guards the read), and the commit writes the
    # row, the stamp, the event (its id from INCR, its stream id the server's, since INCR answers only at EXEC), the
    # stream's pruning and the index in one MULTI / EXEC (one round trip), which Redis refuses (a nil EXEC: CONFLICT)
    # if a watched key changed since the WATCH. Not shipped: WATCH is the connection's state, which a reconnect
    # drops silently, after which EXEC writes over a newer row; and its event log is not the store's (the stream's
    # ids are the server's, not the events' ids), so Store#events and #audit cannot read it. Without a fence only
    # (no token epoch's check).
    module WatchCommit
      private

      # Every request reads under its WATCH: none starts from what the last commit left, or from a refused one's.
      def remembered(_resource) = nil
      def remember(*, **) = nil

      def read(keys, fields)
        @events = keys[0].sub(/:lease\z/, ":events")
        replies = @client.pipelined do |pipeline|
          pipeline.call("WATCH", *keys, @events)
          pipeline.call("HMGET", keys[0], *fields)
          pipeline.call("HGETALL", keys[1]) if keys[1]
          pipeline.call("XRANGE", @events, "-", "+", "COUNT", 2)
          pipeline.call("TIME")
        end
        clock_read(*replies.pop)
        @oldest = replies.pop
        [nil, *replies.drop(1)]
      end

      def commit(keys, args)
        raise NotImplementedError, "WatchCommit checks no token epoch: open the store without a fence" \
          unless args[5].empty?

        names, pairs, event = args[8].split, args[9].split, args[10].split
        cutoff = Float(args[4])
        pruned = @oldest.filter_map { |id, entry| id if Float(entry[entry.index("at") + 1]) < cutoff }
        replies = @client.pipelined do |pipeline|
          pipeline.call("MULTI")
          pipeline.call("HDEL", keys[1], *names) unless names.empty?
          pipeline.call("HSET", keys[1], *pairs) unless pairs.empty?
          pipeline.call("HSET", keys[0], "stamp", args[1]) unless names.empty? && pairs.empty?
          pipeline.call("XDEL", keys[2], *pruned) unless pruned.empty?
          pipeline.call("INCR", keys[3])
          pipeline.call("XADD", keys[2], "MAXLEN", args[3], "*", *event)
          pipeline.call("ZADD", keys[4], 0, args[2])
          pipeline.call("EXEC")
        end
        id = replies.last&.[](-3)
        [id ? [id] : ["moved"], nil]
      end
    end

    # The one-statement SQLite lease: an upsert that takes an expired (or released) row, a DELETE of the owner's row
    # to release, an UPDATE of a live row to renew; each statement its own transaction (autocommit), on a connection
    # with the store's pragmas (WAL, synchronous FULL), prepared once. The time is the machine's wall clock, as the
    # store's on SQLite. +busy_timeout+ (Float seconds; nil: none, one process alone on the file) is applied as the
    # store applies its own, a busy handler that sleeps with the GVL released, so that several processes writing the
    # file wait for one another as the store's would.
    class SQLiteUpsertLock < Lock
      SCHEMA = "CREATE TABLE IF NOT EXISTS bench_leases (name TEXT PRIMARY KEY, owner INTEGER NOT NULL, " \
               "expires_at REAL NOT NULL)"
      ACQUIRE = <<~SQL
        INSERT INTO bench_leases (name, owner, expires_at) VALUES (?1, ?2, ?3 + ?4)
        ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE bench_leases.expires_at <= ?3
      SQL
      RELEASE = "DELETE FROM bench_leases WHERE name = ?1 AND owner = ?2"
      RENEW = "UPDATE bench_leases SET expires_at = ?3 + ?4 WHERE name = ?1 AND owner = ?2 AND expires_at > ?3"

      def initialize(path, resource:, busy_timeout: nil)
        super()
        @db = SQLite3::Database.new(path)
        @db.busy_handler_timeout = (busy_timeout * 1000).round if busy_timeout
        @db.execute("PRAGMA journal_mode = WAL")
        @db.execute("PRAGMA synchronous = FULL")
        @db.execute(SCHEMA)
        @acquire, @release, @renew = [ACQUIRE, RELEASE, RENEW].map { @db.prepare(_1) }
        @resource = resource
        @renewed = "#{resource}/renewed"
        @acquire.execute(@renewed, OWNER, LeaseMachines::Store::WALL_CLOCK.call, TTL)
      end

      def sqlite_connection = @db

      def cycle
        @acquire.execute(@resource, OWNER, LeaseMachines::Store::WALL_CLOCK.call, TTL)
        return false unless @db.changes == 1

        @release.execute(@resource, OWNER)
        @db.changes == 1
      end

      def renew
        @renew.execute(@renewed, OWNER, LeaseMachines::Store::WALL_CLOCK.call, TTL)
        @db.changes == 1
      end

      def close
        [@acquire, @release, @renew].each(&:close)
        @db.close
      end
    end

    # The one-statement PostgreSQL lease in ShedLock's style (its JdbcTemplate provider's PostgreSQL SQL with the
    # database's time): an INSERT ... ON CONFLICT DO UPDATE that takes an expired row, an UPDATE that ends the lock
    # at now() to release, an UPDATE of a live row to renew (ShedLock's extend). Autocommit: each statement is its
    # own transaction, committed with the server's fsync and synchronous_commit, one round trip.
    class PostgreSQLUpsertLock < Lock
      SCHEMA = <<~SQL
        CREATE TABLE IF NOT EXISTS shedlock (name varchar(64) PRIMARY KEY, lock_until timestamptz NOT NULL,
          locked_at timestamptz NOT NULL, locked_by varchar(255) NOT NULL)
      SQL
      ACQUIRE = <<~SQL
        INSERT INTO shedlock (name, lock_until, locked_at, locked_by) VALUES ($1, now() + $2::interval, now(), $3)
        ON CONFLICT (name) DO UPDATE SET lock_until = now() + $2::interval, locked_at = now(), locked_by = $3
        WHERE shedlock.lock_until <= now()
      SQL
      RELEASE = "UPDATE shedlock SET lock_until = now() WHERE name = $1 AND locked_by = $2"
      RENEW = "UPDATE shedlock SET lock_until = now() + $2::interval WHERE name = $1 AND locked_by = $3 " \
              "AND lock_until > now()"

      def initialize(url, resource:)
        super()
        @connection = ::PG.connect(url)
        @connection.exec("SET client_min_messages = warning")
        @connection.exec(SCHEMA)
        @resource = resource
        @renewed = "#{resource}/renewed"
        @ttl = "#{TTL} seconds"
        @owner = "bench-#{OWNER}"
        @connection.exec_params(ACQUIRE, [@renewed, @ttl, @owner])
        @round_trips = RoundTrips.new(@connection, RoundTrips::PG)
      end

      def pg_connection = @connection

      def cycle
        @connection.exec_params(ACQUIRE, [@resource, @ttl, @owner]).cmd_tuples == 1 &&
          @connection.exec_params(RELEASE, [@resource, @owner]).cmd_tuples == 1
      end

      def renew = @connection.exec_params(RENEW, [@renewed, @ttl, @owner]).cmd_tuples == 1

      def close = @connection.close
    end

    # The one-statement MySQL lease as ShedLock takes it (its JdbcTemplate provider's MySQL SQL with the server's
    # time, UTC_TIMESTAMP(3)): the row made once by an INSERT IGNORE (ShedLock remembers the names it has made and
    # goes straight to the UPDATE after), then an UPDATE that takes an expired row to acquire, an UPDATE that ends
    # the lock at the server's now to release, and an UPDATE of a live row to renew (ShedLock's extend). Autocommit:
    # each statement is its own transaction, committed with the server's innodb_flush_log_at_trx_commit and
    # sync_binlog, one round trip. Affected rows are found rows (CLIENT_FOUND_ROWS, as Connector/J reports them), so
    # that a renewal in the same millisecond as the last counts as one.
    class MySQLUpsertLock < Lock
      SCHEMA = <<~SQL
        CREATE TABLE IF NOT EXISTS shedlock (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL,
          locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL,
          PRIMARY KEY (name))
      SQL
      NOW = "UTC_TIMESTAMP(3)"
      UNTIL = "TIMESTAMPADD(MICROSECOND, %<micros>d, #{NOW})".freeze
      INSERT = "INSERT IGNORE INTO shedlock (name, lock_until, locked_at, locked_by) " \
               "VALUES ('%<name>s', #{UNTIL}, #{NOW}, '%<by>s')".freeze
      ACQUIRE = "UPDATE shedlock SET lock_until = #{UNTIL}, locked_at = #{NOW}, locked_by = '%<by>s' " \
                "WHERE name = '%<name>s' AND lock_until <= #{NOW}".freeze
      RELEASE = "UPDATE shedlock SET lock_until = #{NOW} WHERE name = '%<name>s' AND locked_by = '%<by>s'".freeze
      RENEW = "UPDATE shedlock SET lock_until = #{UNTIL} WHERE name = '%<name>s' AND locked_by = '%<by>s' " \
              "AND lock_until > #{NOW}".freeze

      def initialize(options, resource:)
        super()
        @connection = ::Mysql2::Client.new(**options, flags: ::Mysql2::Client::FOUND_ROWS)
        @connection.query(SCHEMA)
        held, renewed = [resource, "#{resource}/renewed"].map do |name|
          values = { name: @connection.escape(name), by: "bench-#{OWNER}", micros: (TTL * 1_000_000).round }
          @connection.query(format(INSERT, values)) # acquired: ShedLock's first lock of a name
          values
        end
        @acquire, @release = [ACQUIRE, RELEASE].map { format(_1, held) }
        @renew_sql = format(RENEW, renewed)
        @connection.query(@release)
        @round_trips = RoundTrips.new(@connection, RoundTrips::MYSQL)
      end

      def mysql_connection = @connection

      def cycle = update(@acquire) && update(@release)
      def renew = update(@renew_sql)
      def close = @connection.close

      private

      def update(sql)
        @connection.query(sql)
        @connection.affected_rows == 1
      end
    end

    # with_advisory_lock through ActiveRecord's postgresql or mysql2 adapter: a session-level advisory lock taken and
    # given back around an empty block (pg_try_advisory_lock, pg_advisory_unlock; MySQL's GET_LOCK(name, 0),
    # RELEASE_LOCK). Nothing is written, and the lock ends with the session: no renewal, no token.
    class AdvisoryLock < Lock
      def initialize(model, resource:)
        super()
        @model = model
        @resource = resource
        @mysql = @model.lease_connection.adapter_name.match?(/mysql/i)
        @round_trips = RoundTrips.new(server_connection, @mysql ? RoundTrips::MYSQL : RoundTrips::PG)
      end

      def renews? = false
      def durable? = false
      def pg_connection = @mysql ? nil : @model.lease_connection.raw_connection
      def mysql_connection = @mysql ? @model.lease_connection.raw_connection : nil

      def cycle = @model.with_advisory_lock(@resource) { true } == true

      def close = @model.remove_connection
    end

    # A redlock-style lock on one Redis instance (the Redlock algorithm's steps with N = 1, as redlock-rb takes
    # them): a random value per lock, a script (EVALSHA, loaded once) that sets the key when it is free, the lock's
    # validity (its TTL less the time the request took and the clock drift allowed, 1% of the TTL and 2 ms) checked
    # before it counts as held, a compare-and-delete script to release, and the setting script again to extend the
    # lock that holds the key's value (renew).
    class RedlockLock < Lock
      LOCK = "if (redis.call('exists', KEYS[1]) == 0 and ARGV[3] == 'new') or redis.call('get', KEYS[1]) == ARGV[1] " \
             "then return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) end"
      UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
      DRIFT = 0.01
      DRIFT_MS = 2

      def initialize(client, resource:)
        super()
        @client = client
        @resource = "#{resource}/redlock"
        @renewed = "#{resource}/redlock/renewed"
        @ttl = (TTL * 1000).round
        @lock, @unlock = [LOCK, UNLOCK].map { @client.call("SCRIPT", "LOAD", _1) }
        @value = SecureRandom.uuid
        lock(@renewed, @value, "new") or raise "redlock: #{@renewed} is held"
        @round_trips = RoundTrips.new(@client, RoundTrips::REDIS)
      end

      def durable? = false

      def cycle
        value = SecureRandom.uuid
        lock(@resource, value, "new") && @client.call("EVALSHA", @unlock, 1, @resource, value) == 1
      end

      def renew = lock(@renewed, @value, "extend")

      def close = @client.close

      private

      # Whether the key was set to +value+ and the lock is still valid once the answer is in.
      def lock(key, value, mode)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC, :float_millisecond)
        set = @client.call("EVALSHA", @lock, 1, key, value, @ttl, mode) == "OK"
        elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC, :float_millisecond) - started
        set && @ttl - elapsed - ((@ttl * DRIFT) + DRIFT_MS) > 0
      end
    end

    # Redis through redis-client: SET key value NX PX ttl to acquire, a compare-and-delete script (EVAL) to release,
    # a compare-and-PEXPIRE script to renew, on a server that keeps nothing on disk.
    class RedisLock < Lock
      RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
      RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) " \
              "else return 0 end"

      def initialize(client, resource:)
        super()
        @client = client
        @resource = resource
        @renewed = "#{resource}/renewed"
        @owner = "bench-#{OWNER}"
        @ttl = (TTL * 1000).round
        @client.call("SET", @renewed, @owner, "PX", @ttl)
        @round_trips = RoundTrips.new(@client, RoundTrips::REDIS)
      end

      def durable? = false

      def cycle
        @client.call("SET", @resource, @owner, "NX", "PX", @ttl) == "OK" &&
          @client.call("EVAL", RELEASE, 1, @resource, @owner) == 1
      end

      def renew = @client.call("EVAL", RENEW, 1, @renewed, @owner, @ttl) == 1

      def close = @client.close
    end
  end
end
