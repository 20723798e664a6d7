# frozen_string_literal: true

module LeaseMachines
  class Store
    # The store contract: what a database adapter (Store::SQLite, Store::PostgreSQL, Store::MySQL, Store::Redis) does
    # for Store, written once. Store makes the shape of every request (claim, open, decide natively, close) and the
    # extension every decision; an adapter only reaches its database, runs a request's transaction in as few round
    # trips as it can, and reads and writes the store's rows. It knows no lease rule.
    #
    # Every adapter subclasses Adapter and implements each method of REQUIRED (Adapter's own raise
    # NotImplementedError); the rules in `test/support/store_*_rules.rb` (store_contract_rules.rb first) run the same
    # tests on every adapter, and `test/store/adapter_test.rb` checks that each implements the whole contract. The RBS
    # interface `LeaseMachines::Store::_Adapter` (sig/lease_machines/store.rbs) types it.
    #
    # == The rows
    #
    # A lease's row crosses as [owner, token, expires_at, last_issued, observed, revision] (Integers, Floats, nil
    # when vacant; owner 0 to 2**64-1, which SQL databases keep as its two's complement: #signed, #unsigned). An
    # event crosses as the extension writes it: [kind, at, owner, token, expires_at, revision, reason,
    # replaced_owner, replaced_token, replaced_expires_at] with a fenced write's mark appended; read back as
    # [id, resource, slot, *those]. A resource's name is a UTF-8 String the extension checked (1 to 1,024 bytes);
    # #check_name! refuses, with ArgumentError, one the database cannot keep.
    #
    # == A decision
    #
    # #open_request (#open_slots for a semaphore) opens the store's own transaction, locks the resource's row (every
    # slot row) so that no other request on it can commit in between, and reads it, with the database's clock when
    # asked and the token epoch the core decides in (nil: the database has none). #close_request (#close_slots)
    # writes what the decision says (nil: nothing changed), logs its event and commits; an optimistic adapter
    # (Redis) may answer Store::CONFLICT instead, when the row moved since it was read (nothing written: Store
    # decides again on a new open). #next_epoch is called when the core's token would open the next token epoch.
    # A decision is never exposed before its commit: any failure raises the driver's error (one of ::errors), which
    # Store turns into StoreError, and Store ends the claim with #rollback_own.
    #
    # == A fenced write
    #
    # #open_fence opens the write's transaction (the store's own, or +savepoint+ inside the application's), locks
    # the lease's row against grants until it commits, and reads it and the fence mark with reads that see the newest
    # committed rows whatever the transaction's isolation. #close_fence raises the mark, logs the write and ends the
    # transaction (releases the savepoint, or commits); #refuse_fence logs a refusal and ends it the same way.
    # #ended_inside? tells whether a close failed because the caller's block ended the transaction itself.
    #
    # == What an adapter keeps
    #
    # No session state on a connection it was given (the application's): what a request sets, it puts back. A
    # connection it opened it may configure, and reconnects (#check!) after losing it.
    class Adapter
      # Every SQL database here keeps signed 64-bit integers: the store refuses to issue tokens above this.
      MAX_INTEGER = 2**63 - 1
      # How many resources' rows a server adapter remembers as existing (#learn).
      KNOWN_ROWS = 4096

      # The instance methods every adapter implements (Adapter's raise NotImplementedError).
      REQUIRED = %i[close closed? check! in_transaction? check_name! open_request close_request open_slots close_slots
                    next_epoch open_fence close_fence refuse_fence ended_inside? rollback_own rollback_to_savepoint
                    events latest_events changes event_counts leases lease_count server_now read_row
                    read_fence].freeze
      # The class methods every adapter implements: its name, its driver's errors, whether it takes a database
      # argument, how it names one in a message (never with a password), and what a fenced write joined to an
      # application's transaction holds until it ends (Store#fence_holds: :row, :database or nil).
      REQUIRED_CLASS_METHODS = %i[adapter_name errors accepts? describe fence_holds].freeze

      # The options of its own (keywords of Store.new) an adapter takes beyond the busy timeout and migrate:.
      def self.options = []

      # The driver's message, on one line.
      def self.message(error) = error.message.strip.gsub(/\s*\n\s*/, "; ")

      REQUIRED_CLASS_METHODS.each do |method|
        define_singleton_method(method) do |*|
          raise NotImplementedError, "#{self} does not implement ::#{method}, which the store contract requires"
        end
      end

      REQUIRED.each do |method|
        define_method(method) do |*, **|
          raise NotImplementedError, "#{self.class} does not implement ##{method}, which the store contract requires"
        end
      end

      # The connection (the driver's object) and what names it in messages (never a password).
      attr_reader :connection, :name

      # How much of the event log is kept: +per_lease+ events of each lease (Integer), none older than +max_age+
      # Float seconds before the newest event's +at+. Kept for the adapter's own pruning; an adapter that prunes
      # otherwise (SQLite's trigger) overrides it.
      def retain_events(per_lease:, max_age:)
        @keep_events = Integer(per_lease)
        @events_max_age = Float(max_age)
      end

      # What the database promises of a committed decision, when that is more than "durable on commit": the Redis
      # adapter's Redis::Durability; nil for the SQL adapters, which commit durably.
      def durability = nil

      # The adapter's own state is never shown (the options it reconnects with may carry a password).
      def inspect = "#<#{self.class.name} #{@name}>"

      private

      # An owner (0 to 2**64-1) as the signed 64-bit integer the SQL tables store, and back.
      def signed(owner) = owner && owner > MAX_INTEGER ? owner - 2**64 : owner
      def unsigned(owner) = Integer === owner && owner.negative? ? owner + 2**64 : owner

      # Event rows ([id, resource, slot, kind, at, owner, ...]) with their owners (at 5 and 10) read back from two's
      # complement.
      def unsigned_events(rows) = rows.map { unsigned_at(_1, 5, 10) }

      # The accepted changes (#changes' rows: owner at 5, replaced_owner at 9) with their owners read back.
      def unsigned_changes(rows) = rows.map { unsigned_at(_1, 5, 9) }

      # Creates the schema where it is missing (only outside a transaction), then checks every table's columns and the
      # format: what the server databases' adapters (PostgreSQL, MySQL) share. With +migrate+ false nothing is
      # written: a database without this format's tables is refused instead. Tables without their format row (loaded
      # from a schema dump, which keeps no rows) are taken over: the schema's statements add what is missing. The
      # adapter defines #table_columns (each table's expected [column, type] pairs), #read_columns (the same, as the
      # database has them), #read_format and #create_schema, and the constants FORMAT and SCHEMA.
      def prepare_schema(migrate)
        found = read_columns
        check_columns(found)
        format = found.key?("lease_machines_schema") ? read_format : nil
        if found.size < table_columns.size || format.nil?
          missing = table_columns.keys - found.keys
          unless migrate
            what = format ? "its tables (#{missing.join(", ")}) are missing" : "it has no lease store tables"
            refuse("#{what}, and this store may not write to its schema (migrate: false): open it once with a " \
                   "store that may (the default), or run the install generator's migration")
          end
          if in_transaction?
            what = missing.empty? ? "its format row is missing" : "its tables (#{missing.join(", ")}) are missing"
            refuse("#{what} and a transaction is open on the connection: run the schema " \
                   "(#{self.class.name}::SCHEMA) or the install generator's migration first")
          end
          create_schema
          check_columns(read_columns)
          format = read_format
        end
        return if format == self.class::FORMAT

        refuse("its schema is format #{LeaseMachines.shown(format)}; this lease_machines reads format " \
               "#{self.class::FORMAT} only")
      end

      # Refuses a table whose columns (+found+, by table) are not the ones the schema declares.
      def check_columns(found)
        found.each do |table, columns|
          expected = table_columns.fetch(table)
          next if columns == expected

          refuse("#{table} is not the lease store's table (columns #{describe_columns(columns)}; format " \
                 "#{self.class::FORMAT} has #{describe_columns(expected)})")
        end
      end

      def describe_columns(columns) = columns.map { |name, type| "#{name} #{type}" }.join(", ")

      def refuse(why)
        raise StoreError, "#{@name} is not a lease store of this version: #{why}"
      end

      # The request an open began (#open_request, #open_slots: [resource, what its close needs...]), ended: what its
      # close needs, or StoreError for a close without its open.
      def ended_request(resource)
        opened, *parts = @request
        @request = nil
        raise StoreError, "#{@name}: a request's end without its start (#{resource.inspect})" unless opened == resource

        parts
      end

      # Remembers that +resource+'s row exists (a committed request made it or saw it): a decision on it then skips
      # the statement that makes it exist. Past KNOWN_ROWS names, all are forgotten and learnt again.
      def learn(resource)
        @known_rows.clear if @known_rows.size >= KNOWN_ROWS
        @known_rows[resource] = true
      end

      # A copy of +row+ with the owners at +indexes+ read back from two's complement (a lease row's: 0).
      def unsigned_at(row, *indexes)
        row = row.dup
        indexes.each { row[_1] = unsigned(row[_1]) }
        row
      end
    end
  end
end
