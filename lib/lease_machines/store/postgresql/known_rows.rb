# frozen_string_literal: true

# What the PostgreSQL store knows of a resource's row without reading it (as its own last commit of the row left it,
# or as a refused commit's answer found it), the server's clock carried forward from its last reading, and a decision
# on such a row committed in one round trip by lease_machines_commit_known (a compare-and-set).

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      # How many resources a store remembers as its last commit of each left them.
      KNOWN = 1024
      # How far before the server's clock (read in the commit, after the row's lock) a carried instant may be, in
      # seconds: the round trips since the last reading, with room for a busy host (a loaded 2-core machine takes
      # milliseconds per round trip). A decision that reads its row may commit up to IDLE_IN_DECISION after its
      # instant; a carried one is held to far less, and a process frozen between its decision and its commit is
      # refused, as it is there.
      CARRIED_WITHIN = 0.25
      COMMIT_KNOWN = "SELECT * FROM lease_machines_commit_known(#{(1..32).map { "$#{_1}" }.join(", ")})".freeze
      HAS_COMMIT_KNOWN = "SELECT to_regproc('lease_machines_commit_known') IS NOT NULL"
      # The function's definition in SCHEMA, for a database whose schema an earlier version made.
      COMMIT_KNOWN_DEFINITION = /^CREATE OR REPLACE FUNCTION lease_machines_commit_known\(.*?^\$\$;$/m
      # What the store remembers of a resource: its slot 0 +row+ (the decision's columns), the token +epoch+ a
      # decision on it is made in, the +history+ that epoch was recorded in (nil: a first grant in this history must
      # record it, which only a read can), whether it has +no_slots+ rows (nil: not known), and whether it is a
      # refused commit's +answer+ (whose clock reading the store carries forward from then on).
      Known = Struct.new(:row, :epoch, :history, :no_slots, :answer)
      private_constant :KNOWN, :CARRIED_WITHIN, :COMMIT_KNOWN, :HAS_COMMIT_KNOWN, :COMMIT_KNOWN_DEFINITION,
                       :Known

      private

      # Whether decisions on known rows can be committed in one round trip: the function exists, or is created now
      # (where the store may write its schema, outside a transaction). A database an earlier version made, opened with
      # migrate: false, has every decision read its row first.
      def prepare_commit_known(migrate)
        return true if @connection.exec(HAS_COMMIT_KNOWN).getvalue(0, 0) == "t"
        return false unless migrate && !in_transaction?

        self.class.create_tables(@connection, SCHEMA[COMMIT_KNOWN_DEFINITION])
        true
      end

      # The resource as this store knows it, opened without a round trip: [rows (the block makes them of slot 0's
      # row), the instant (the server's clock carried forward, #carried_clock, which the commit checks; nil without
      # +clock+), the token epoch]. Nil when the store does not know it (in this session: what it knew of another
      # session, which may be another server's, is forgotten), or cannot carry the server's clock, or (+slots+) does
      # not know that it has no slot rows: then the request reads its rows.
      def open_known(resource, clock, slots:)
        same_session!
        known = @commit_known && @known.delete(resource)
        return nil unless known && (!slots || known.no_slots)

        carried = clock ? carried_clock : nil
        return nil if clock && carried.nil?

        @request = [resource, resource, true, known, carried, slots]
        [yield(known.row), carried, known.epoch]
      end

      # Forgets what the store knew of rows and of the server's clock when the connection's session is another than
      # the one it learnt them in (a reset connection, an application's connection that reconnected, maybe to
      # another server).
      def same_session!
        pid = @connection.backend_pid
        return if @known_pid == pid

        forget_known
        @known_pid = pid
      end

      # The server's clock as this store last read it, carried forward by this process's monotonic clock; nil before
      # a reading.
      def carried_clock
        return nil unless @server_clock

        seconds, at = @server_clock
        seconds + (Process.clock_gettime(Process::CLOCK_MONOTONIC) - at)
      end

      # Keeps +seconds+, the server's clock just read, for #carried_clock.
      def clock_read(seconds)
        same_session!
        @server_clock = [seconds, Process.clock_gettime(Process::CLOCK_MONOTONIC)]
        seconds
      end

      # Remembers +resource+ as +known+, for the next request's open; the oldest known resource is forgotten beyond
      # KNOWN.
      def remember(resource, known)
        return unless @commit_known

        same_session!
        @known[resource] = known
        @known.shift if @known.size > KNOWN
      end

      # Forgets every known row and the server's clock (a reconnect may reach another server).
      def forget_known
        @known&.clear
        @committed&.clear
        @server_clock = nil
      end

      # One round trip: a decision on the known row (#open_known, the request's +known+ and +carried+ instant, whether
      # it was decided on no slot rows: +slots+) committed by lease_machines_commit_known, with the transaction's
      # opening and COMMIT. Without a round trip, CONFLICT for a decision only a read can commit (one in another slot,
      # or one that issued a token in a history the store has not recorded yet). When the row moved (or the carried
      # instant is refused), nothing was written: the answer is remembered (unless this request was decided on an
      # answer already: then the next reads, under the row's lock) and the request answers CONFLICT. A commit decided
      # on an answer leaves the next request to read the row (#remember_read: until it is quiet).
      def close_known(resource, request, slot, row, event, issued)
        _, _, known, carried, slots = request
        return CONFLICT unless slot.zero? && (issued.nil? || known.history)

        commit = [COMMIT_KNOWN, commit_known_params(resource, known, carried, slots, row, event, issued)]
        results = finish { round_trip([*@opening, commit, "COMMIT"]) }
        answer = raw(results[-2])
        if answer.ntuples.zero?
          committed(resource, row || known.row)
          # Decided on an answer, the row had moved since this store's last commit: the next request reads.
          remember(resource, Known.new(row || known.row, known.epoch, known.history, slots || known.no_slots)) \
            unless known.answer
          return nil
        end

        answered(resource, answer.values.first, known.answer)
        CONFLICT
      end

      # After a commit that read the row first (+read+: the Known it read, +slot+ the slot written): the row as the
      # commit left it (+row+, or the one read when nothing changed), in the token epoch now recorded when the commit
      # recorded it (a first grant in a new history, that +issued+ a token).
      #
      # Only where the row read is the one this store's last commit of it left (or the store never committed it): a
      # resource that others decide on between this store's requests would have its next commit refused and answered
      # (a round trip lost), so it is read under its lock until it is quiet again.
      def remember_read(resource, read, slot, row, issued)
        left = slot.zero? && row || read.row
        quiet = !@committed.key?(resource) || @committed[resource] == read.row
        committed(resource, left)
        return unless quiet

        history = read.history || (@history if issued && slot.zero?)
        remember(resource, Known.new(left, read.epoch, history, slot.zero? ? read.no_slots : false))
      end

      # Keeps +row+ as the one this store's last commit left of +resource+ (up to KNOWN resources).
      def committed(resource, row)
        @committed.delete(resource)
        @committed[resource] = row
        @committed.shift if @committed.size > KNOWN
      end

      # The parameters of lease_machines_commit_known.
      def commit_known_params(resource, known, carried, slots, row, event, issued)
        history = issued && known.history
        _, params = log_event(resource, 0, event)
        [resource, *columns_of(known.row), slots ? true : false, carried, carried && CARRIED_WITHIN,
         history && known.epoch, history, !row.nil?, *(row ? columns_of(row) : Array.new(6)), *params.drop(2)]
      end

      # Remembers the answer of a refused commit (+values+: the row as it is now, the server's clock, whether it has
      # no slot rows, and the token epoch's row), unless the request was decided on an answer already (+twice+): the
      # next request then reads. StoreError when the row is gone (as a read finds it, #row_gone!).
      def answered(resource, values, twice)
        *columns, clock, no_slots, epoch, history, timeline = values
        row_gone!(resource) if columns[5].nil? # the next request makes it exist again
        return if twice

        number = epoch_of([epoch, history, timeline], system_identifier)
        clock_read(bytes_float(clock))
        history = @new_epoch ? nil : @history
        remember(resource, Known.new(text_columns(columns), number, history, no_slots == "t", true))
      end
    end
  end
end
