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

  # A usage error is one line on stderr, nothing on stdout, and exit status 2 (1 is the unsafe verdict's); before,
  # a bad --ttl crashed every worker and the verdict still said safe.
  def test_usage_errors_are_one_line_on_stderr_and_exit_2
    {
      %w[--workers nine] => "invalid argument: --workers nine (must be a whole number from 2 to 8)",
      %w[--ttl 1e-300] => "invalid argument: --ttl 1e-300 (must be a number of seconds from 0.1 to 60.0)",
      %w[--ttl 1e400] => "invalid argument: --ttl 1e400 (must be a number of seconds from 0.1 to 60.0)",
      %w[--duration -1] => "invalid argument: --duration -1 (must be a number of seconds from 0.1 to 600.0)",
      %w[--pause 1e300] =>
        "invalid argument: --pause 1e300 (must be a number of seconds, more than the TTL and at most 600.0)",
      %w[--pause 0.5 --ttl 1] => "--pause 0.5 must exceed --ttl 1.0, or nothing happens",
      %w[--ttl] => "missing argument: --ttl",
      %w[--databse x.sqlite3] => "invalid option: --databse (did you mean --database?)",
      %w[--version] => "invalid option: --version",
      %w[--workers 3 extra] => "unexpected argument \"extra\" (it takes options only)"
    }.then { assert_usage_errors(COMMAND, "worker-seven", _1) }
    output, errors, status = Open3.capture3(COMMAND, "--help")
    assert_equal [0, ""], [status.exitstatus, errors]
    assert_match(/\AUsage: bin\/worker-seven \[options\]$/, output)
    assert_match(/^Exit status: 0 safe, 1 unsafe, 2 a usage error\.$/, output)
  end
end
