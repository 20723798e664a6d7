# frozen_string_literal: true

require "support/active_job_support"

# A process that dies holding a lease (SIGKILL: no ensure, no release) frees its key once the TTL has run out, never
# before; while it lives, its renewer (restarted in the forked child) keeps the lease.
class ActiveJobCrashTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  TTL = 1.0

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
    sleep 2 * TTL # longer than the TTL: the child's renewer keeps the lease

    assert_raises(LeaseMachines::LeaseBusy) { job.perform_now("acme") }
    Process.kill(:KILL, pid)
    Process.wait(pid)
    killed_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(LeaseMachines::LeaseBusy) { job.perform_now("acme") }
    sleep 0.05 until other_store.checkpoint(resource: "#{job.name}:acme").lease.expires_at < Time.now.to_f
    job.perform_now("acme")

    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - killed_at, :<=, TTL + 0.5
    assert_equal [2], ran, "the parent ran once, with a newer token, after the TTL"
    assert_empty events_named(:lost)
  ensure
    reader&.close
  end
end
