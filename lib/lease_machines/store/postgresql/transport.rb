# frozen_string_literal: true

# The transport of the PostgreSQL store: the connection it opens, a round trip in pipeline mode or as one simple
# query, each answer waited for within a deadline, the last round trip's lost connection (outcome unknown), and
# the connection brought back to rest after a request cut short.

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      private

      # A new connection to +url+; a failure's message never carries the password.
      def connect(url)
        ::PG.connect(url)
      rescue ::PG::Error => e
        message = self.class.passwords(url).reduce(self.class.message(e)) { |text, pw| text.gsub(pw, "[password]") }
        raise ::PG::ConnectionBad, message, cause: nil # the driver's own error may quote the password
      end

      # Runs +statements+ ([sql, params] each) in one round trip, in pipeline mode, and returns their results.
      # The first failed statement's error is raised (the ones after it were skipped by the server).
      def pipeline(statements)
        settle unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
        @connection.enter_pipeline_mode
        begin
          statements.each { |sql, params, format| @connection.send_query_params(sql, params || [], format || 0) }
          @connection.pipeline_sync
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @answer_within
          results = statements.map do
            result = answer(deadline) or raise ::PG::ConnectionBad, "the server sent no result: #{lost}"
            answer(deadline) # nil: the end of this statement's results
            result
          end
          answer(deadline) # the sync point
          results.each { |result| result.check unless result.result_status == ::PG::PGRES_PIPELINE_ABORTED }
          results
        ensure
          leave_pipeline
        end
      end

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
      def settle
        return unless @connection.status == ::PG::CONNECTION_OK

        unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
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
