# frozen_string_literal: true

require "test_helper"
require "open3"

# bin/worker-seven as a user runs it: worker 7's stale write is refused and the verdict is safe; without the fence
# the same story ends with the stale write landing and a failing verdict.
class WorkerSevenTest < Minitest::Test
  COMMAND = File.expand_path("../bin/worker-seven", __dir__)

  def setup
    plain_suite_only!("forks workers")
    checkout_only!("runs this checkout's bin/worker-seven")
    requires_sqlite3!
  end

  def test_the_stale_write_is_refused
    output, status = Open3.capture2e(COMMAND, "--workers", "3", "--ttl", "0.5", "--duration", "3")
    assert status.success?, output
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1/, output)
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's \d+/, output)
    assert_match(/^stale writes landed: 0; holders interleaved: 0$/, output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
  end

  def test_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    output, status = Open3.capture2e(COMMAND, "--ttl", "0.5", "--duration", "3", "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/^stale writes landed: [1-9]/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  def test_bad_options_are_named
    output, status = Open3.capture2e(COMMAND, "--workers", "nine")
    refute status.success?
    assert_match(/invalid argument: --workers nine/, output)
  end
end
