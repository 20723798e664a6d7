# frozen_string_literal: true

require "support/active_job_support"

# holds_lease limit: N with real worker processes: forked children perform the job with the background renewer on
# the monotonic clock, and the store decides on its own clock (the SQLite file's host, the PostgreSQL server's).
# Long jobs keep their slots through renewal; a job stalled with SIGSTOP past its TTL and resumed can neither write
# into its successor's slot nor free it; jobs completed in bulk leave no slot held. On SQLite and
# (ActiveJobSlotProcessesPostgreSQLTest) PostgreSQL.
class ActiveJobSlotProcessesTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  # Renewals every quarter of a second leave a worker TTL - RENEW seconds to renew in: a margin a loaded machine keeps,
  # and one past the 2 s after which PostgreSQL ends a decision's transaction that a frozen process left open (the
  # stalled worker's renewer may be inside one, holding the resource's rows, when SIGSTOP lands; the other worker's
  # renewal waits for them that long).
  TTL = 4.0
  RENEW = 0.25
  LIMIT = 2

  def setup
    super
    plain_suite_only!("forked worker processes")
    LeaseMachines::Jobs.configuration.clock = LeaseMachines::Jobs::Configuration::MONOTONIC
    database = path
    LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(database) }
    @children = []
    @job = job_class(:SlotWorkerJob) do
      class_attribute :body
      holds_lease key: ->(key) { key }, ttl: TTL, renew_every: RENEW, limit: LIMIT, on_conflict: :raise
      define_method(:perform) { |_key| self.class.body.call(lease) }
    end
  end

  def teardown
    @children&.each do |pid, *|
      Process.kill(:KILL, pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
    @store&.close
    super
  end

  def resource = "#{@job.name}:acme"
  def store = @store ||= LeaseMachines::Store.new(path)
  # The lease in +slot+ of the key's row, as the store has it.
  def slot_lease(slot) = store.checkpoint(resource: resource, slot: slot).lease

  # Waits until the store's row shows the lease of each slot in +slots+ (a Hash of slot => the lease it was granted)
  # renewed to at least +ttls+ TTLs past the expiry it was granted with: its worker's renewer kept it that long.
  def renewed_past(slots, ttls)
    renewed = eventually(30) do
      slots.all? do |slot, first|
        lease = slot_lease(slot)
        lease.token == first.token && lease.expires_at >= first.expires_at + (ttls * TTL)
      end
    end
    assert renewed, "slots #{slots.keys} renewed #{ttls} TTL past their grant"
  end

  # A child process running the block, given a line writer to the parent, then saying "done" (or "failed ..." for
  # an exception). Returns [pid, reader]; its lines are read back with +line+.
  def child
    reader, writer = IO.pipe
    before_fork
    pid = fork do
      reader.close
      tell = ->(text) { writer.puts(text) || writer.flush }
      yield tell
      tell.call("done")
      exit!(0)
    rescue Exception => e # rubocop:disable Lint/RescueException
      tell.call("failed #{e.class}: #{e.message}")
      exit!(1)
    end
    writer.close
    @children << [pid, reader]
    [pid, reader]
  end

  # A worker process performing the job once with the background renewer, its body given the lease and the line
  # writer. The child's release is reported too: "release <status> <reason>".
  def worker(&body)
    job = @job
    child do |tell|
      LeaseMachines::Jobs.configuration.renewal = :background
      ActiveSupport::Notifications.subscribe("release.lease_machines") do |event|
        tell.call("release #{event.payload[:status]} #{event.payload[:reason]}".rstrip)
      end
      job.body = ->(lease) { body.call(lease, tell) }
      job.perform_now("acme")
    end
  end

  # No SQLite connection of the parent's crosses a fork (the sqlite3 gem closes them in the child, and warns).
  def before_fork
    ActiveRecord::Base.connection_handler.clear_all_connections!
    @store&.close
    @store = nil
  end

  def line(reader) = reader.gets&.chomp || flunk("the worker ended without a word")

  # Writes a report line through the slot's fence, as the job's own writes are.
  def write(lease, body) = lease.fenced { Report.create!(body: body, token: lease.token) }

  def test_long_jobs_keep_their_slots_through_renewal
    stop = File.join(scratch_dir("lm-slot-stop"), "stop") # the parent's word to the workers: write once more, finish
    workers = Array.new(LIMIT) do |index|
      worker do |lease, tell|
        tell.call("held #{lease.slot} #{lease.token}")
        until File.exist?(stop)
          write(lease, "#{index} #{lease.slot}")
          sleep 0.05
        end
        write(lease, "#{index} last")
      end
    end
    held = workers.map { |_, reader| line(reader) }

    assert_equal ["held 0 1", "held 1 1"], held.sort, "each worker in a slot of its own, with its first token"
    granted = Array.new(LIMIT) { [_1, slot_lease(_1)] }.to_h
    [1, 2].each do |ttls|
      renewed_past(granted, ttls)
      assert_raises(LeaseMachines::LeaseBusy, "a third perform, while both run") { @job.perform_now("acme") }
    end
    File.write(stop, "")
    workers.each { |_, reader| assert_equal ["release released", "done"], [line(reader), line(reader)] }
    workers.each { |pid, _| assert_predicate Process.wait2(pid).last, :success? }
    lines = Report.pluck(:body, :token)
    LIMIT.times do |index|
      mine = lines.select { _1.first.start_with?("#{index} ") }
      assert_includes mine, ["#{index} last", 1], "worker #{index} wrote through its slot renewed past #{2 * TTL}s"
      assert_equal [1], mine.map(&:last).uniq, "never a new token: the slot was kept, not granted again"
    end
    assert_equal [nil, nil], Array.new(LIMIT) { slot_lease(_1) }, "released"
  end

  def test_a_stalled_holder_can_neither_write_into_nor_free_its_successors_slot
    stop = File.join(scratch_dir("lm-slot-stop"), "stop") # the parent's word to the other workers: finish
    # The other worker takes its slot first: started after the stall, a slow fork and boot on a loaded machine could
    # find the stalled slot already expired and take it (rightly), leaving nothing for the successor to show.
    other, other_reader = worker do |lease, tell|
      tell.call("held #{lease.slot} #{lease.token}")
      until File.exist?(stop)
        write(lease, "other")
        sleep 0.05
      end
    end
    assert_equal "held 0 1", line(other_reader), "the other slot, held (and renewed) all along"
    stalled, stalled_reader = worker do |lease, tell|
      write(lease, "stalled before")
      tell.call("held #{lease.slot} #{lease.token}")
      Process.kill(:STOP, Process.pid) # the whole process stops, its renewer thread with it
      begin
        write(lease, "stalled after")
        tell.call("wrote")
      rescue LeaseMachines::Fenced => e
        tell.call("refused #{e.reason}")
      rescue LeaseMachines::LeaseLost => e # its renewer, resumed first, heard the refusal: nothing written either
        tell.call("lost #{e.reason}")
      end
    end
    assert_equal "held 1 1", line(stalled_reader)
    assert_predicate Process.waitpid2(stalled, Process::WUNTRACED).last, :stopped?
    stalled_lease = slot_lease(1)
    # The stalled job's slot runs out: on the store's clock (the wall clock, or the PostgreSQL server's on this host).
    assert eventually(30) { stalled_lease.expires_at <= Process.clock_gettime(Process::CLOCK_REALTIME) }
    successor, successor_reader = worker do |lease, tell|
      write(lease, "successor")
      tell.call("held #{lease.slot} #{lease.token}")
      sleep 0.05 until File.exist?(stop)
    end
    assert_equal "held 1 2", line(successor_reader), "the successor took the stalled job's slot, with token 2"

    Process.kill(:CONT, stalled)
    refusal, release, done = Array.new(3) { line(stalled_reader) }
    assert_includes ["refused stale_token", "lost stale_token"], refusal, "its late write was refused"
    assert_equal ["release rejected stale_token", "done"], [release, done], "and so was its release"
    assert_predicate Process.wait2(stalled).last, :success?
    kept = store.checkpoint(resource: resource, slot: 1).lease
    assert_equal 2, kept.token, "the successor keeps its slot"
    assert_operator kept.expires_at, :>, Time.now.to_f
    File.write(stop, "")
    [[other, other_reader], [successor, successor_reader]].each do |pid, reader|
      assert_equal ["release released", "done"], [line(reader), line(reader)]
      assert_predicate Process.wait2(pid).last, :success?
    end
    written = Report.where.not(body: "other").order(:id).pluck(:body, :token)
    assert_equal [["stalled before", 1], ["successor", 2]], written
    assert_equal [1], Report.where(body: "other").distinct.pluck(:token), "the other slot never changed hands"
  end

  # Two worker processes each enqueue a batch with perform_all_later on the :async adapter (real threads), every job
  # of one key with limit 3, retried on conflict: their performs end together, in bulk, and release together. Each job
  # stays until it sees the limit reached, so the check that it was reached holds however loaded the machine is.
  def test_jobs_completed_in_bulk_leave_no_slot_held
    limit = 3
    batch = 12
    bulk = job_class(:BulkSlotJob) do
      holds_lease key: ->(key, _id) { key }, ttl: 30.0, renew_every: 10.0, limit: limit,
                  on_conflict: :retry, wait: 0.01, attempts: 10_000
      const_set(:DONE, Thread::Queue.new)
      define_method(:perform) do |_key, id|
        lease.fenced { Report.create!(body: "in #{id} #{lease.slot}", token: lease.token) }
        # Stays in until the table shows the limit reached (the last jobs of the batch cannot fill it: 5 s at most),
        # so that a loaded machine, where the jobs would rarely overlap, still proves the limit is reached.
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
        until Report.where("body LIKE 'in %'").count - Report.where("body LIKE 'out %'").count >= limit ||
              Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          sleep 0.01
        end
        lease.fenced { Report.create!(body: "out #{id} #{lease.slot}", token: lease.token) }
      ensure
        self.class::DONE << id
      end
    end
    workers = Array.new(2) do |index|
      child do
        ::ActiveJob::Base.queue_adapter = :async
        ::ActiveJob.perform_all_later(Array.new(batch) { bulk.new("bulk", "#{index}-#{_1}") })
        batch.times { bulk::DONE.pop(timeout: 60) || raise("a job did not end") }
        ::ActiveJob::Base.queue_adapter.shutdown(wait: true)
      end
    end
    workers.each do |pid, reader|
      assert_equal "done", line(reader)
      assert_predicate Process.wait2(pid).last, :success?
    end

    rows = Report.order(:id).pluck(:body).map(&:split)
    assert_equal 2 * batch, rows.count { _1.first == "in" }, "every job ran once"
    inside = {}
    most = rows.map do |kind, id, slot|
      if kind == "in"
        refute_includes inside.values, slot, "job #{id} entered slot #{slot} while another was in it"
        inside[id] = slot
      else
        inside.delete(id)
      end
      inside.size
    end.max
    assert_equal limit, most, "#{limit} at once at most, and the limit was reached"
    resource = "#{bulk.name}:bulk"
    assert_equal [nil] * limit, Array.new(limit) { store.checkpoint(resource: resource, slot: _1).lease }, "released"
    granted = Array.new(limit) { store.acquire(resource: resource, owner: _1 + 1, ttl: 30.0, limit: limit).lease }
    assert_equal [0, 1, 2], granted.map(&:slot), "the next #{limit} holders find every slot free at once"
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobSlotProcessesTest)
