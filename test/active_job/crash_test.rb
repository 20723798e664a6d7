# frozen_string_literal: true

require "support/active_job_support"

# A process that dies holding a lease (SIGKILL: no ensure, no release) frees its key once the TTL has run out, never
# before; while it lives, its renewer (restarted in the forked child) keeps the lease.
class ActiveJobCrashTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  TTL = 2.0
  RESOURCE = "LeaseMachines::ActiveJobSupport::CrashJob:acme"

  # The lease in the key's row, as the store has it (read back, never decided on: other_store's clock is the test's).
  def lease_row = other_store.checkpoint(resource: RESOURCE).lease

  def test_a_killed_process_frees_the_key_after_the_ttl
    plain_suite_only!("a forked child process")
    LeaseMachines::Jobs.configuration.clock = LeaseMachines::Jobs::Configuration::MONOTONIC
    LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(path) }
    ran = []
    job = job_class(:CrashJob) do
      holds_lease key: ->(key, _ready = nil) { key }, ttl: TTL, renew_every: 0.2, on_conflict: :raise
      define_method(:perform) do |_key, ready = nil|
        ran << lease.token
        return unless ready

        ready.puts(lease.token)
        ready.flush
        sleep
      end
    end
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      LeaseMachines::Jobs.configuration.renewal = :background
      job.new("acme", writer).perform_now
    end
    writer.close
    assert_equal "1", reader.gets&.chomp, "the child holds the lease"
    granted = lease_row
    # The child's renewer keeps the lease past the TTL it was granted for: seen in the store's row, however long that
    # takes on a loaded machine, not assumed after a sleep.
    assert eventually(30) { lease_row.expires_at >= granted.expires_at + TTL }, "renewed past its first TTL"
    assert_equal 1, lease_row.token

    assert_raises(LeaseMachines::LeaseBusy) { job.perform_now("acme") }
    Process.kill(:KILL, pid)
    Process.wait(pid)
    killed_at = LeaseMachines::Store::WALL_CLOCK.call
    held = lease_row
    assert_operator held.expires_at, :<=, killed_at + TTL, "what the dead process held runs out within the TTL"
    assert_raises(LeaseMachines::LeaseBusy) { job.perform_now("acme") }
    assert eventually(30) { lease_row.expires_at <= LeaseMachines::Store::WALL_CLOCK.call }, "it ran out"
    job.perform_now("acme")

    assert_equal [2], ran, "the parent ran once, with a newer token, once the TTL had run out"
    regrant = other_store.events(resource: RESOURCE).find { _1.kind == :acquired && _1.token == 2 }
    assert_operator regrant.at, :>=, held.expires_at, "granted once the dead process's lease ran out, not before"
    assert_empty events_named(:lost)
  ensure
    reader&.close
  end
end
