# frozen_string_literal: true

# The commit of the Redis store, a compare-and-set by script: the request's read (MULTI ... EXEC), the COMMIT
# script (commit.lua) and its round trip (with WAIT), tried once more on a broken connection, and the CONFLICT a
# moved resource answers.

module LeaseMachines
  class Store
    class Redis < Adapter
      # Applies a decision made on the rows read, if the resource's stamp (KEYS[1]'s) is still ARGV[1], if the
      # decision's instant ARGV[7] (Integer microseconds of the server's clock; "": the caller's clock, not checked) is
      # no later than TIME and at most ARGV[8] microseconds before it, and, for a decision that issues a token
      # (ARGV[6] not empty), if the token epoch KEYS[6] is still ARGV[6] ("-": none): the row's fields ARGV[9] deleted
      # from KEYS[2] and its pairs ARGV[10] set there, the stamp set to ARGV[2] (also for a refusal), the event's
      # pairs ARGV[11] added to the stream KEYS[3] as the next id of KEYS[4] (ARGV[9] to ARGV[11] are words
      # separated by spaces: names, numbers, kinds and reasons, never a space in one), keeping its newest ARGV[4] and
      # deleting its two oldest if their at is below ARGV[5], and the name ARGV[3] in the index KEYS[5]. Answers {the
      # event's id, TIME};
      # when a check failed, {"moved", the stamp, the row of KEYS[1] (COLUMNS), the epoch, TIME}, the resource as it
      # is now, to be decided again; {"epoch"} when the epoch read is still there but was set in another history of
      # the server (HISTORY: another process, or since a promotion). Nothing is written but for the first answer,
      # and the claim below.
      #
      # The claim: a refusal's commit (ARGV[12] empty; "1" for a change) moves the stamp too (its row keeps the clock
      # watermark, and the log is in the order of the decisions), so on a hot resource the refusals of requests
      # retried without a pause would move it between every answer and commit of the holder's renewal or release,
      # which would never commit (its request backs off; theirs are answered at once). So a change's commit that
      # found the stamp moved (not one refused for its carried clock or its epoch alone) sets the fields +claim+
      # (TIME) and +claimant+ (ARGV[14], the store's own random id) of KEYS[1], and for ARGV[13] microseconds after
      # that TIME another store's refusal is answered "moved" too (nothing written): the holder decides again on its
      # answer and commits, and its commit deletes the claim (as any change's commit does, and the claimant's own
      # refusal, where its decision turned into one). The refusals are decided again on the answer, after a pause
      # from their second conflict on.
      # Every key's type is read before the first write, so a foreign key fails the script before it wrote anything.
      # (commit.lua names the fields of COLUMNS, in their order, where it reads the row: change both together.)
      CLAIM_US = "50000"
      private_constant :CLAIM_US
      COMMIT = "#{HISTORY}\n#{File.read(File.expand_path("commit.lua", __dir__))}"
      private_constant :COMMIT

      private

      # One round trip (MULTI ... EXEC): [the token epoch (a String; nil when there is none), the +fields+ of the hash
      # keys[0], every field of keys[1] when given], read at one instant with the server's TIME (kept: #clock_read).
      def read(keys, fields)
        replies = fetch(transaction: true) do |transaction|
          transaction.call("HMGET", keys[0], *fields)
          transaction.call("HGETALL", keys[1]) if keys[1]
          transaction.call("HGET", EPOCH, "epoch")
          transaction.call("TIME")
        end
        clock_read(*replies.pop)
        [replies.pop, *replies]
      end

      # COMMIT (and WAIT), in one round trip. Returns [the script's answer, the replicas WAIT counted (nil: no
      # +wait:+; -1: not known)].
      #
      # A connection that broke on the way (not a timeout) is tried once more, on a new one: the socket of a server
      # restarted since this store's last command is dead, and only a command finds out. Every commit moves the
      # resource's stamp (ARGV[1]) to a new one of its own (ARGV[2]), random, so a second attempt cannot apply the
      # decision twice: it applies it where the first did not (the stamp is still the one read), finds the first's
      # stamp (it committed: the answer is the first's, whichever layer sent it again, this one or a client's own
      # reconnect_attempts), or finds the resource moved on (the server lost it, or another commit followed the
      # first), and the request is decided again on the resource as it is now. Raises StoreError, the outcome
      # unknown, on a timeout (the first attempt may still be applied) and when the second attempt fails too, for
      # whatever reason (a failover's read-only replica, a server still loading).
      def commit(keys, args)
        attempt = 0
        begin
          replies = commit_once(keys, args)
        rescue ::RedisClient::ConnectionError, ::RedisClient::CommandError => e
          raise unknown_commit(e) if attempt.positive?
          raise if ::RedisClient::CommandError === e || ::RedisClient::ReadOnlyError === e ||
                   ::RedisClient::MasterDownError === e
          raise unknown_commit(e) if ::RedisClient::TimeoutError === e

          attempt += 1
          retry
        end
        reply = replies.first
        return replies unless reply.first == "moved" && reply[1] == args[1]

        # The first attempt committed: its answer (the event's id not known, 0), with this answer's clock; a WAIT on
        # this connection may not cover the first attempt's write, so replication is not known.
        [[0, *reply.last(2)], @wait.positive? ? -1 : nil]
      end

      def commit_once(keys, args)
        replies = commit_round_trip("EVALSHA", @commit_sha, keys, args)
        if ::RedisClient::CommandError === replies.first && replies.first.message.start_with?("NOSCRIPT")
          replies = commit_round_trip("EVAL", COMMIT, keys, args)
        end
        replies.each { raise _1 if Exception === _1 }
        replies
      end

      def unknown_commit(error)
        StoreError.new("#{@name}: the connection failed while the commit was on its way " \
                       "(#{self.class.message(error)}): whether it committed is unknown; the next request reads " \
                       "what the server kept")
      end

      # [the script's answer (a CommandError returned, not raised), WAIT's answer when +wait:+]: a pipeline only with
      # WAIT.
      def commit_round_trip(command, script, keys, args)
        return [script_answer([command, script, keys.size, *keys, *args])] unless @wait.positive?

        @client.pipelined(exception: false) do |pipeline|
          pipeline.call(command, script, keys.size, *keys, *args)
          pipeline.blocking_call(@wait_ms / 1000.0 + ANSWER_TIMEOUT, "WAIT", @wait, @wait_ms)
        end
      end

      def script_answer(command)
        @client.call_v(command)
      rescue ::RedisClient::CommandError => e
        e
      end

      # The request found the resource changed since its read: CONFLICT, after a pause that grows with the
      # conflicts (jittered, at most 20 ms), or StoreError once +busy_timeout+ has run out.
      def conflict(resource)
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        unless @deadline
          @deadline = now + @busy_timeout
          @conflicts = 0
        end
        @conflicts += 1
        if now > @deadline
          @deadline = nil
          raise StoreError, "#{@name}: #{resource.inspect} kept changing under the request (#{@conflicts} attempts " \
                            "in #{@busy_timeout} s, busy_timeout): nothing was decided"
        end
        sleep(rand * [0.0005 * 2**[@conflicts, 6].min, 0.02].min) if @conflicts > 1
        CONFLICT
      end
    end
  end
end
