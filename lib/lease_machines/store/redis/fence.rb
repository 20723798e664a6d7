# frozen_string_literal: true

# The fence of the Redis store, in the application's SQL database: that database's adapter opened, the mark read
# under the resource's advisory lock on PostgreSQL, and a fenced write's read of the lease's row (fence_read.lua).

module LeaseMachines
  class Store
    class Redis < Adapter
      # The classid of the advisory lock a fence on PostgreSQL takes per resource (with hashtext(resource)).
      FENCE_LOCK = 731_120_172
      # Reads the fields ARGV of the hash KEYS[1] with the token epoch KEYS[2] and TIME, at one instant: {the values,
      # the epoch (false: none), 1 if it was set in the server's history as it is now (HISTORY) else 0, TIME}.
      FENCE_READ = "#{HISTORY}\n#{File.read(File.expand_path("fence_read.lua", __dir__))}"
      private_constant :FENCE_LOCK, :FENCE_READ

      private

      # The SQL adapter of the fence's database, its store tables (and the token epochs' table) created where missing.
      def open_fence_database(fence, busy_timeout, migrate)
        adapter = PostgreSQL.accepts?(fence) ? PostgreSQL : SQLite
        opened = adapter.new(fence, busy_timeout: busy_timeout, migrate: migrate)
        begin
          create_epochs(opened.connection, PostgreSQL === opened) if migrate
        rescue *adapter.errors
          opened.close
          raise
        end
        opened
      rescue *adapter.errors => e
        raise StoreError, "#{@name}: cannot open the fence at #{adapter.describe(fence)}: #{adapter.message(e)}"
      end

      # The fence's mark read again once the resource's advisory lock is held (PostgreSQL): two fenced writes of a
      # resource are one after the other, so a stale token is refused by the mark a newer one left.
      def locked_mark(resource, slot)
        @fence.connection.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", [FENCE_LOCK, resource])
        @fence.read_fence(resource, slot)
      end
    end
  end
end
