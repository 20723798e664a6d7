# frozen_string_literal: true

require "test_helper"
require "open3"

# bin/nightly-report as a user runs it: real ActiveJob workers in separate processes, one SQLite database. Worker 7's
# job stalls past its TTL, a successor takes over, and the stalled job's late write is refused by the fence (the job
# then sees LeaseLost); without the fence the same story ends with the stale line in the report and a failing
# verdict.
class NightlyReportTest < Minitest::Test
  COMMAND = File.expand_path("../bin/nightly-report", __dir__)

  def setup
    plain_suite_only!("forks job workers")
    checkout_only!("runs this checkout's bin/nightly-report")
    requires_sqlite3!
    begin
      require "active_job"
      require "active_record"
    rescue LoadError
      skip "ActiveJob and ActiveRecord are not installed for this Ruby"
    end
  end

  def test_the_stalled_jobs_late_write_is_refused_and_the_job_sees_lease_lost
    output, status = Open3.capture2e(COMMAND, "--workers", "3", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_match(/worker 7\s+acquired NightlyReportJob:Account\/1: token 1$/, output)
    assert_match(/worker 12\s+NightlyReportJob:Account\/1 is held elsewhere: retry later$/, output)
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1$/, output)
    assert_match(/worker (12|19)\s+acquired NightlyReportJob:Account\/1: token 2$/, output)
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's [23]; line 3 rolled back$/, output)
    assert_match(/worker 7\s+LeaseLost \(lost\): stops without writing more$/, output)
    assert_match(/^report lines in commit order, by token: 1x2 2x5 3x5$/, output)
    assert_match(/^refused: worker 7's line 3 with token 1 \(the fence had seen [23]\); in the report: no$/, output)
    assert_match(/^stale writes landed: 0; jobs interleaved: 0; workers failed: 0$/, output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
  end

  def test_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    output, status = Open3.capture2e(COMMAND, "--workers", "2", "--ttl", "0.6", "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/worker 7\s+wrote line 3 with token 1$/, output)
    assert_match(/^stale writes landed: [1-9]/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  def test_bad_options_are_named
    output, status = Open3.capture2e(COMMAND, "--lines", "two")
    refute status.success?
    assert_match(/invalid argument: --lines two/, output)
    output, status = Open3.capture2e(COMMAND, "--pause", "0.5", "--ttl", "1")
    refute status.success?
    assert_match(/--pause must exceed --ttl/, output)
  end
end
