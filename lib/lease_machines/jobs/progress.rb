# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # A continuable job's progress (ActiveJob::Continuable, Rails 8.1: its completed steps and the current step's
    # cursor) and its lease.
    #
    # Every continuable job that holds a lease stops at its next checkpoint once the lease is not held (see
    # #checkpoint): Continuable resumes it later from its cursor, under a new lease.
    #
    # With +holds_lease progress: :fenced+ the progress is also kept in the application's database, beside the fence
    # (the table lease_machines_progress, one row per job: its resource, job_id, the progress as JSON, the token that
    # saved it), and saved only through the fence: at each checkpoint, at the end of each perform, and by
    # <tt>lease.fenced(step, to:)</tt> in the very transaction of the write it covers. Each perform reads it back under
    # its new lease, before the job's first step: what a holder committed is where its successor resumes, whatever
    # cursor the job's own data carries (a copy the queue ran twice, a stalled holder's resumption). A stalled holder
    # cannot move it: its save is refused by the fence, and the job stops there.
    module Progress
      TABLE = "lease_machines_progress"
      # The table, made where it is missing (at a perform's first read, or write): portable to SQLite and PostgreSQL;
      # MYSQL_SCHEMA is MySQL's (a key's columns need a length there).
      SCHEMA = <<~SQL
        CREATE TABLE IF NOT EXISTS #{TABLE} (
          resource TEXT NOT NULL,
          job_id TEXT NOT NULL,
          progress TEXT NOT NULL,
          token BIGINT NOT NULL,
          saved_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
          PRIMARY KEY (resource, job_id)
        )
      SQL
      MYSQL_SCHEMA = <<~SQL
        CREATE TABLE IF NOT EXISTS #{TABLE} (
          resource VARBINARY(1024) NOT NULL,
          job_id VARCHAR(255) NOT NULL,
          progress LONGTEXT NOT NULL,
          token BIGINT NOT NULL,
          saved_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
          PRIMARY KEY (resource, job_id)
        ) ENGINE = InnoDB
      SQL
      # The upsert of a job's progress, never over a row saved with a newer token: the SQL standard's ON CONFLICT
      # (SQLite, PostgreSQL), and MySQL's ON DUPLICATE KEY UPDATE (whose assignments see the ones before them: the
      # token goes last).
      UPSERT = <<~SQL
        INSERT INTO #{TABLE} (resource, job_id, progress, token) VALUES (%s)
        ON CONFLICT (resource, job_id) DO UPDATE
        SET progress = excluded.progress, token = excluded.token, saved_at = CURRENT_TIMESTAMP
        WHERE #{TABLE}.token <= excluded.token
      SQL
      MYSQL_UPSERT = <<~SQL
        INSERT INTO #{TABLE} (resource, job_id, progress, token) VALUES (%s)
        ON DUPLICATE KEY UPDATE progress = IF(token <= VALUES(token), VALUES(progress), progress),
        saved_at = IF(token <= VALUES(token), CURRENT_TIMESTAMP, saved_at), token = GREATEST(token, VALUES(token))
      SQL
      # Where a job keeps the progress it last read or saved (a JSON String), and a connection that the table exists.
      SAVED = :@lease_machines_progress
      READY = :@lease_machines_progress_table
      # Where a job keeps the progress its perform read back (a JSON String): SAVED differs once it saved progress.
      RESTORED = :@lease_machines_progress_restored

      module_function

      # A checkpoint of +job+ (Checkpoints#checkpoint!). When a perform of it holds a lease: the progress is saved
      # through the fence (+progress: :fenced+, when it changed), and the lease checked. The job's own lease lost
      # (LeaseLost from the check or the save, Fenced from the save) stops it: see #stop.
      def checkpoint(job)
        lease = job.instance_variable_get(:@lease_machines_lease)
        return unless JobLease === lease && lease.job.equal?(job) && !lease.finished?

        declaration = Declarations.declaration(job.class)
        save(job, lease) if declaration.progress == :fenced
        lease.check!
      rescue Loss => e
        raise unless e.job.equal?(job)

        stop(job, declaration, e)
      end

      # +job+'s lease was lost (+error+) at a checkpoint. With +on_lost: :retry+, a job that advanced in this
      # execution (a step completed, or the cursor moved) is interrupted there (reason :lease_lost) and Continuable
      # resumes it from its cursor (after its resume_options' wait, within its max_resumptions), a loss event saying
      # :resume; otherwise +error+ is raised, and handled as the job's lost lease is anywhere else (Continuable
      # resumes a job that advanced when resume_errors_after_advancing, the default; else on_lost).
      #
      # With +progress: :fenced+ only progress saved through the fence counts: the job advanced when it saved progress
      # in this execution, and its continuation is first set back to the progress it last saved (or read back), so
      # that what is enqueued to resume from is only what the fence accepted, never a refused cursor. A job whose
      # every save was refused spends one of +lost_attempts+, as a loss without progress does.
      def stop(job, declaration, error)
        if declaration.progress == :fenced
          advanced = saved?(job)
          rewind(job, advanced)
        else
          advanced = advanced?(job.continuation)
        end
        raise error unless declaration.on_lost == :retry && advanced

        Execution.loss(job, error, action: :resume)
        job.interrupt!(reason: :lease_lost)
      end

      # Whether the job advanced in this execution: a step completed, or the running step's cursor moved (which the
      # continuation itself counts only once the step has ended).
      def advanced?(continuation)
        continuation.advanced? || continuation.instrumentation[:current_step]&.advanced? || false
      end

      # Whether +job+ saved progress through the fence in this execution (+progress: :fenced+).
      def saved?(job) = job.instance_variable_get(SAVED) != job.instance_variable_get(RESTORED)

      # Sets +job+'s continuation back to the progress it last saved or read back (+progress: :fenced+): a job that
      # +advanced+ stays advanced to Continuable (resume_errors_after_advancing), one that did not is not.
      def rewind(job, advanced)
        continuation = ::ActiveJob::Continuation.new(job, ActiveSupport::JSON.decode(job.instance_variable_get(SAVED)))
        continuation.instance_variable_set(:@advanced, true) if advanced # Continuation#advanced?'s own
        job.continuation = continuation
      end

      # Reads +job+'s progress back under +lease+ (a perform's, before its body runs): the job resumes from there when
      # a holder saved one. Raises ArgumentError for a job that is not continuable.
      def restore(job, lease)
        unless defined?(::ActiveJob::Continuable) && ::ActiveJob::Continuable === job
          raise ArgumentError, "holds_lease progress: :fenced: #{job.class.name} does not include " \
                               "ActiveJob::Continuable"
        end

        saved = Jobs.configuration.fence_record!.with_connection do |connection|
          table(connection)
          resource, job_id = [lease.resource, job.job_id].map { connection.quote(_1) }
          connection.select_value("SELECT progress FROM #{TABLE} WHERE resource = #{resource} AND job_id = #{job_id}")
        end
        job.continuation = ::ActiveJob::Continuation.new(job, ActiveSupport::JSON.decode(saved)) if saved
        job.instance_variable_set(RESTORED, encode(job.continuation.to_h))
        job.instance_variable_set(SAVED, job.instance_variable_get(RESTORED))
      end

      # Saves +job+'s progress through the fence, when it changed since last read or saved. Raises the job's Lost or
      # Refused when the lease is lost.
      def save(job, lease)
        saved = encode(job.continuation.to_h)
        return if saved == job.instance_variable_get(SAVED)

        lease.fenced { |connection| write(connection, lease, saved) }
        job.instance_variable_set(SAVED, saved)
      end

      # The end of a perform that read its progress (however it ended): what it did is saved, unless the lease is lost
      # (the progress its successor saved stands). A failure is reported (as a release's is), never raised over the
      # job's own outcome, nor over the lease's release: an error handler or subscriber that raises while it is
      # reported is warned about on stderr.
      def settle(job, lease)
        save(job, lease)
      rescue Loss
        nil
      rescue StandardError => e
        context = { during: "progress", resource: lease.resource, token: lease.token }
        Renewer.reporting("progress", e) { Jobs.configuration.report(e, context) }
        Renewer.reporting("progress", e) { lease.instrument(:thread_error, error: e) }
      end

      # JobLease#fenced with a step: the write (the block, given the connection) and the step's cursor moved to +to+,
      # in one fenced transaction (the progress saved in it under +progress: :fenced+), then +step.set!(to)+ once it
      # committed (a checkpoint, which stops the job if the lease was lost meanwhile). Refused, neither moves.
      def fenced(lease, step, to)
        unless step.respond_to?(:set!) && step.respond_to?(:name)
          raise TypeError, "fenced: the step must be a continuable job's step (the block's argument), got " \
                           "#{LeaseMachines.shown(step)}"
        end
        raise ArgumentError, "fenced: to: is required with a step (the cursor the write moves it to)" if to.nil?

        job = lease.job
        saved = nil
        if Declarations.declaration(job.class)&.progress == :fenced
          saved = encode(job.continuation.to_h.merge("current" => [step.name.to_s, to]))
        end
        result = lease.fenced do |connection|
          value = yield connection
          write(connection, lease, saved) if saved
          value
        end
        job.instance_variable_set(SAVED, saved) if saved
        step.set!(to)
        result
      end

      def encode(progress) = ActiveSupport::JSON.encode(progress)

      # Writes +progress+ for +lease+'s job on +connection+, in the fenced transaction; a row saved with a newer token
      # is never written over (the fence refuses an older token first).
      def write(connection, lease, progress)
        table(connection)
        values = [lease.resource, lease.job.job_id, progress, lease.token].map { connection.quote(_1) }.join(", ")
        connection.exec_update(format(mysql?(connection) ? MYSQL_UPSERT : UPSERT, values), "lease_machines progress")
      end

      # Whether +connection+ (ActiveRecord's) is to MySQL or MariaDB, whose SQL differs.
      def mysql?(connection) = connection.adapter_name.match?(/mysql|maria|trilogy/i)

      # Makes the table where it is missing (known made, once outside a transaction, for the connection's life).
      def table(connection)
        return if connection.instance_variable_get(READY)

        connection.execute(mysql?(connection) ? MYSQL_SCHEMA : SCHEMA) unless connection.table_exists?(TABLE)
        connection.instance_variable_set(READY, true) unless connection.transaction_open?
      end
    end
  end
end
