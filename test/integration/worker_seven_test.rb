# frozen_string_literal: true

require "test_helper"
require "open3"
require_relative "../../examples/support/hosts"
require "support/redis_support"

# bin/worker-seven as a user runs it: worker 7's stale write is refused and the verdict is safe; without the fence
# the same story ends with the stale write landing and a failing verdict. On SQLite, and on PostgreSQL with each
# worker on a simulated host (a network namespace, where this process can make them) with its clock skewed; with the
# leases in Redis (--redis) and the fence in SQLite or PostgreSQL.
class WorkerSevenTest < Minitest::Test
  include RedisStoreSupport
  COMMAND = File.expand_path("../../bin/worker-seven", __dir__)

  def setup
    plain_suite_only!("forks workers")
    checkout_only!("runs this checkout's bin/worker-seven")
    requires_sqlite3!
  end

  # A run with +args+ that tells worker 7's story and ends safe, its stale write refused. Returns its output.
  def run_safe(*args)
    output, status = Open3.capture2e(COMMAND, *args)
    assert status.success?, output
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's \d+/, output)
    assert_match(/^stale writes landed: 0; holders interleaved: 0$/, output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
    output
  end

  # A run with +args+ whose stale write lands: the verdict fails with exit status 1.
  def assert_unsafe(*args)
    output, status = Open3.capture2e(COMMAND, *args)
    assert_equal 1, status.exitstatus, output
    assert_match(/^stale writes landed: [1-9]/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  def test_the_stale_write_is_refused
    output = run_safe("--workers", "3", "--ttl", "0.5", "--duration", "3")
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1/, output)
  end

  def test_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    assert_unsafe("--ttl", "0.5", "--duration", "3", "--without-fence")
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
      %w[--workers 3 extra] => "unexpected argument \"extra\" (it takes options only)",
      %w[--postgres --database x.sqlite3] => "--postgres takes a postgresql:// URL as --database, not \"x.sqlite3\"",
      %w[--redis localhost:6379] => "--redis takes a redis:// URL, not \"localhost:6379\"",
      %w[--mysql --database postgresql://x/y] => "--mysql takes a mysql2:// URL as --database, not " \
                                                 "\"postgresql://x/y\"",
      %w[--mysql --postgres] => "--postgres and --mysql are two databases; give one"
    }.then { assert_usage_errors(COMMAND, "worker-seven", _1) }
    output, errors, status = Open3.capture3(COMMAND, "--help")
    assert_equal [0, ""], [status.exitstatus, errors]
    assert_match(/\AUsage: bin\/worker-seven \[options\]$/, output)
    assert_match(/^Exit status: 0 safe, 1 unsafe, 2 a usage error\.$/, output)
    assert_match(/^\s+--postgres\s+on PostgreSQL/, output)
    assert_match(/^\s+--redis \[URL\]\s+the leases in Redis/, output)
  end

  # The leases in a throwaway redis-server (appendfsync always), the tokens issued by the Redis store on Redis's
  # clock; the report and its fence in SQLite, where the stale token is refused.
  def test_with_the_leases_in_redis_the_stale_write_is_refused
    require_redis!
    output = run_safe("--redis", "--ttl", "0.5", "--duration", "3")
    assert_match(%r{ leases in redis://127\.0\.0\.1:\d+ \(a throwaway redis-server, appendfsync always\); }, output)
    assert_match(%r{\); the report and its fence in /\S+\.sqlite3$}, output)
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1$/, output)
  end

  def test_with_the_leases_in_redis_without_the_fence_the_stale_write_lands
    require_redis!
    assert_unsafe("--redis", "--ttl", "0.5", "--duration", "3", "--without-fence")
  end

  # Jobs on Redis, data in PostgreSQL: each worker on a host of its own reaches both servers, its clock skewed; the
  # Redis server's clock decides the leases, PostgreSQL's fence refuses worker 7.
  def test_with_the_leases_in_redis_and_the_fence_in_postgres_the_stale_write_is_refused
    require_redis!
    require_postgres!
    output = run_safe("--postgres", "--redis", "--ttl", "0.5", "--duration", "3")
    refute_match(/NOTICE/, output)
    assert_match(%r{ leases in redis://127\.0\.0\.1:\d+ \(.*\); the report and its fence in postgresql://}, output)
    assert_match(/worker 7\s+by its own clock \(-90\.0s\) the lease has \d+\.\ds to run; by the server's/, output)
  end

  # Worker 7's clock is 90 s behind the server's, worker 12's right, worker 19's 90 s ahead: the store decides on
  # the server's clock, and the fence refuses worker 7 as on SQLite.
  def test_on_postgres_the_workers_run_on_hosts_of_their_own_with_skewed_clocks_and_the_stale_write_is_refused
    require_postgres!
    output = run_safe("--postgres", "--ttl", "0.5", "--duration", "3")
    { 7 => -90.0, 12 => 0.0, 19 => 90.0 }.each do |id, offset|
      where = TestHosts.available? ? 'host 10\.213\.\d+\.\d+ \(namespace lmw\d+-\d\)' : "this machine"
      line = output[/^.*worker #{id}\s+on #{where}, clock #{Regexp.escape(format("%+.1f", offset))}s \(.*$/]
      assert line, "worker #{id} on #{where} with its clock #{offset}s off:\n#{output}"
      assert_in_delta offset, Float(line[/measured against the server's: ([-+]\d+\.\d+)s\)$/, 1]), 1.0, line
    end
    assert_match(/^\s*\S+s\s+run\s+no network namespaces \(.+\): the workers run as local processes$/, output) \
      unless TestHosts.available?
    assert_match(/worker 7\s+by its own clock \(-90\.0s\) the lease has \d+\.\ds to run; by the server's/, output)
  end

  def test_on_postgres_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    require_postgres!
    assert_unsafe("--postgres", "--ttl", "0.5", "--duration", "3", "--without-fence")
  end

  # --mysql: a throwaway MariaDB server; its clock decides, the fence refuses worker 7.
  def test_on_mysql_the_stale_write_is_refused
    require_mysql!
    output = run_safe("--mysql", "--ttl", "0.5", "--duration", "3")
    assert_match(%r{; mysql2://root@127\.0\.0\.1:\d+/lease_machines \(a throwaway MariaDB server; the server's },
                 output)
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1$/, output)
    assert_empty Dir[File.expand_path("../../tmp/worker-seven-mysql-*", __dir__)], "the throwaway server is gone"
  end

  def test_on_mysql_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    require_mysql!
    assert_unsafe("--mysql", "--ttl", "0.5", "--duration", "3", "--without-fence")
  end

  # A server that cannot be reached, or a database it does not have: one line on stderr, nothing on stdout, exit 2.
  def test_a_bad_database_url_is_one_line_on_stderr_and_exit_2
    cluster = require_postgres!
    {
      "#{cluster.url.delete_suffix("/postgres")}/no_such_database" => /database "no_such_database" does not exist/,
      "postgresql://postgres@127.0.0.1:1/postgres" => /127\.0\.0\.1.*port 1 failed: Connection refused/
    }.each do |url, why|
      output, errors, status = Open3.capture3(COMMAND, "--database", url)
      assert_equal [2, ""], [status.exitstatus, output], errors
      assert_match(%r{\Aworker-seven: cannot open the lease store at #{Regexp.escape(url)}: [^\n]*; see bin/}, errors)
      assert errors.end_with?("; see bin/worker-seven --help\n") && errors.lines.one?, errors
      assert_match(why, errors)
    end
  end
end
