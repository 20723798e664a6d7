# frozen_string_literal: true

# The transport of the PostgreSQL store: the connection it opens, a round trip in pipeline mode or as one simple
# query, each answer waited for within a deadline, the last round trip's lost connection (outcome unknown), and
# the connection brought back to rest after a request cut short.

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      # One of the store's own statements: its SQL (with $1, $2, ... parameters), its parameters (sent as text, whatever
      # the connection's type map) and its result format. With prepared statements, a named prepared statement.
      Prepared = Struct.new(:sql, :params, :format)
      # Which of the store's statement names the session has prepared, and their text.
      PREPARED = "SELECT name, statement FROM pg_prepared_statements WHERE name = ANY ($1::text[])"
      private_constant :Prepared, :PREPARED

      private

      # The store's own statement +sql+ with +params+, for #pipeline.
      def own(sql, params = [], format = 0) = Prepared.new(sql, params, format)

      # A new connection to +url+; a failure's message never carries the password.
      def connect(url)
        ::PG.connect(url)
      rescue ::PG::Error => e
        message = self.class.passwords(url).reduce(self.class.message(e)) { |text, pw| text.gsub(pw, "[password]") }
        raise ::PG::ConnectionBad, message, cause: nil # the driver's own error may quote the password
      end

      # Runs +statements+ in one round trip, in pipeline mode, and returns their results. Each is [sql, params,
      # result format] (an unnamed statement: an application's, or one without parameters), or the store's own
      # (Prepared, #own): with prepared statements a named one, prepared in the same round trip the first time the
      # connection's session runs it; without, unnamed. The first failed
      # statement's error is raised (the ones after it were skipped by the server).
      def pipeline(statements)
        settle unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
        prepared_names if @prepared # read from the session first, when that is needed
        @connection.enter_pipeline_mode
        begin
          @preparing = Set.new
          sent = statements.flat_map { send_statement(_1) }
          @connection.pipeline_sync
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @answer_within
          results = sent.filter_map do |prepared|
            result = answer(deadline) or raise ::PG::ConnectionBad, "the server sent no result: #{lost}"
            answer(deadline) # nil: the end of this statement's results
            next result unless prepared

            prepared_names << prepared if result.result_status == ::PG::PGRES_COMMAND_OK
            result.check unless result.result_status == ::PG::PGRES_PIPELINE_ABORTED
            nil
          end
          answer(deadline) # the sync point
          results.each { |result| result.check unless result.result_status == ::PG::PGRES_PIPELINE_ABORTED }
          results
        rescue ::PG::Error => e
          lost_prepared(e)
          raise
        ensure
          leave_pipeline
        end
      end

      # Sends +statement+ into the pipeline: [the name of each statement prepared on the way, nil for the statement].
      def send_statement(statement)
        unless Prepared === statement
          sql, params, format = statement
          @connection.send_query_params(sql, params || [], format || 0)
          return [nil]
        end

        params = statement.params.map { _1&.to_s } # text, whatever the connection's type map
        unless @prepared
          @connection.send_query_params(statement.sql, params, statement.format, all_strings)
          return [nil]
        end

        name = statement_name(statement.sql)
        prepared = prepared_names.include?(name) || @preparing.include?(name) ? [] : [name]
        unless prepared.empty?
          @connection.send_prepare(name, statement.sql)
          @preparing << name
        end
        @connection.send_query_prepared(name, params, statement.format, all_strings)
        prepared << nil
      end

      # The names this store prepared in the connection's session (a reconnect is a new session, with none). After a
      # round trip that found them otherwise (#lost_prepared: a DISCARD ALL, a pooler's new server connection), read
      # from the session (pg_prepared_statements).
      def prepared_names
        pid = @connection.backend_pid
        return @prepared_names.last if @prepared_names&.first == pid

        names = Set.new
        resync(names) if @prepared_names&.first == :unknown
        @prepared_names = [pid, names]
        names
      end

      # Reads which of the store's statements the session has (into +names+), each by its name and its text: a name
      # the session holds for other text is given up for a new one, so that the store never runs another's statement.
      def resync(names)
        listed = ::PG::TextEncoder::Array.new.encode(@statement_names.values)
        found = @connection.exec_params(PREPARED, [listed]).values.to_h
        @statement_names.each do |sql, name|
          next unless found.key?(name)
          next names << name if found[name] == sql

          @statement_names[sql] = "#{name}_#{@statement_names.size + found.size}"
        end
      end

      # A statement the session did not have, or had already: what it has is read again before the next round trip.
      def lost_prepared(error)
        @prepared_names = [:unknown] if unprepared.any? { _1 === error }
      end

      # What the server answers a statement the session lacks (26000) or has already (42P05). (The pg gem is loaded
      # when the store opens, not with this file.)
      def unprepared = [::PG::InvalidSqlStatementName, ::PG::DuplicatePstatement]

      # Runs the block, a round trip that opens the store's transaction or savepoint; when the session lacked a
      # statement the store prepared, or had one it did not know of (DISCARD ALL, which ActiveRecord's reset! runs, a
      # pooler's new server connection), nothing was written: +undo+ ends what it opened, and the block runs once
      # more, preparing what the session lacks (#lost_prepared had the names read again).
      def opened_again(undo)
        yield
      rescue *unprepared
        raise unless @prepared && @connection.transaction_status == ::PG::PQTRANS_INERROR

        @connection.exec(undo)
        yield
      end

      # The name of the store's prepared statement +sql+: lease_machines_ and a digest of its text (a name that is
      # this statement's wherever it is prepared); on an application's connection with this store's own prefix too,
      # so that two stores on one connection never prepare one name twice.
      def statement_name(sql)
        @statement_names[sql] ||= "lease_machines_#{@statement_prefix}#{Digest::SHA256.hexdigest(sql)[0, 16]}"
      end

      def all_strings = (@all_strings ||= ::PG::TypeMapAllStrings.new)

      # Runs +statements+ in one round trip: each a String (a statement without parameters) or [sql, params] (the
      # store's own statement with $1, $2, ... parameters). With prepared statements, in pipeline mode, the latter
      # as named prepared statements (#pipeline); without, as one simple query, the parameters written into the
      # SQL as literals (#literal: quoted by libpq, numbers by the store).
      # A round trip that opens the store's transaction is run again once when the session lost a prepared statement
      # (#opened_again).
      def round_trip(statements)
        unless @prepared
          return simple(statements.map { |statement| String === statement ? statement : inline(*statement) })
        end

        entries = statements.map { |statement| String === statement ? [statement] : own(*statement) }
        return pipeline(entries) unless statements.first == BEGIN_OWN

        opened_again("ROLLBACK") { pipeline(entries) }
      end

      # +sql+ with its $N parameters replaced by the literals of +params+.
      def inline(sql, params) = sql.gsub(/\$(\d+)/) { literal(params.fetch(Integer(Regexp.last_match(1), 10) - 1)) }

      # Runs +statements+ (SQL Strings) in one round trip, as one simple query, and returns their results. The first
      # failed statement's error is raised (the server skipped the ones after it).
      def simple(statements)
        settle unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
        @connection.send_query(statements.join("; "))
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @answer_within
        results = []
        while (result = answer(deadline))
          results << result
        end
        results.each(&:check)
        unless results.size == statements.size
          raise ::PG::ConnectionBad,
                "the server sent #{results.size} results for #{statements.size} statements: #{lost}"
        end

        results
      end

      # Runs the last round trip of a transaction (the block: #pipeline or #simple, with COMMIT or RELEASE at its
      # end): a connection lost on the way leaves the outcome unknown.
      def finish(statements = nil)
        block_given? ? yield : pipeline(statements)
      rescue ::PG::Error => e
        raise if @connection.status == ::PG::CONNECTION_OK && !(::PG::ConnectionBad === e || ::PG::UnableToSend === e)

        raise StoreError, "#{@name}: the connection was lost while the transaction's end was on its way " \
                          "(#{self.class.message(e)}): whether it committed is unknown; the next request reads " \
                          "what the server kept"
      end

      # The next result, waited for until +deadline+ (monotonic seconds): a server that stopped answering has the
      # connection closed (a connection the store opened is opened anew by the next request) and raises
      # PG::ConnectionBad.
      def answer(deadline)
        while @connection.is_busy
          remaining = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          if remaining <= 0 || @connection.socket_io.wait_readable(remaining).nil?
            @connection.close
            @reset_failed = @owned # the next request connects again
            raise ::PG::ConnectionBad, "no answer from the server within #{@answer_within.round(1)} s; the " \
                                       "connection was closed"
          end
          @connection.consume_input
        end
        @connection.get_result
      end

      # What libpq says of a connection that stopped answering.
      def lost
        message = @connection.error_message.to_s.strip
        message.empty? ? "the connection was lost" : message.gsub(/\s*\n\s*/, "; ")
      end

      def leave_pipeline
        return if @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF || pipeline_ended?

        settle # cut short: results still on their way
      rescue ::PG::Error
        nil
      end

      # Brings the connection back to rest after a request cut short (a signal's trap handler raising mid-pipeline, a
      # thread killed inside the block's query): a pipeline is synced and every result read until libpq lets it end
      # (an interrupted pipeline may have sent statements without their sync point, whose results the server holds
      # back until one comes); results of a query still on their way are read and dropped.
      #
      # What the cut-short round trip prepared is not known: the next reads it from the session (#prepared_names).
      def settle
        return unless @connection.status == ::PG::CONNECTION_OK

        unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
          @prepared_names = [:unknown] if @prepared
          @connection.pipeline_sync
          loop do
            result = @connection.get_result
            raise ::PG::ConnectionBad, lost if result.nil? && @connection.status != ::PG::CONNECTION_OK
            next unless result&.result_status == ::PG::PGRES_PIPELINE_SYNC

            break if pipeline_ended?
          end
        end
        # A query of the block's still running is waited for, not cancelled: a cancel request can arrive late and
        # cancel the next statement instead, which may be the store's own.
        @connection.discard_results if @connection.transaction_status == ::PG::PQTRANS_ACTIVE
      end

      # Ends pipeline mode; false while results are still pending (a later sync point's).
      def pipeline_ended?
        @connection.exit_pipeline_mode
        true
      rescue ::PG::Error
        false
      end
    end
  end
end
