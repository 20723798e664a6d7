# frozen_string_literal: true

require "test_helper"
require "open3"
require "securerandom"
require "support/redis_support"
require "support/nightly_report_support"

# bin/nightly-report as a user runs it: real ActiveJob workers in separate processes, one SQLite or PostgreSQL
# database. Worker 7's job stalls past its TTL, a successor takes over, and the stalled job's late write is refused by
# the fence (the job then sees LeaseLost); without the fence the same story ends with the stale line in the report
# and a failing verdict. With --redis the same jobs run on Sidekiq 7.3 (each worker process a Sidekiq launcher,
# ActiveJob's :sidekiq adapter), their leases in a throwaway redis-server and the fence in SQLite or PostgreSQL.
class NightlyReportTest < Minitest::Test
  include RedisStoreSupport
  include NightlyReportSupport

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
    assert_refused_story(output)
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

  # --limit 2: two jobs write at once, each in its slot, never three; worker 7's successor takes its slot (slot 0,
  # with the slot's token 2), and worker 7's late write is refused by that slot's fence.
  def test_with_a_limit_of_two_two_reports_are_written_at_once_and_the_stalled_job_is_refused_in_its_slot
    output, status = Open3.capture2e(COMMAND, "--limit", "2", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_limited_story(output)
  end

  def assert_limited_story(output)
    assert_match(/run\s+4 workers, up to 2 jobs at once, ttl 0\.6s/, output)
    assert_match(%r{worker 7\s+acquired slot 0 of NightlyReportJob:Account/1: token 1$}, output)
    assert_match(%r{worker (12|19|23)\s+acquired slot 1 of NightlyReportJob:Account/1: token 1$}, output)
    assert_match(%r{worker (12|19|23)\s+acquired slot 0 of NightlyReportJob:Account/1: token 2$}, output)
    assert_match(/worker 7\s+REFUSED in slot 0: token 1 is older than the fence's 2; line 3 rolled back$/, output)
    assert_match(/worker 7\s+released token 1 in slot 0 \(rejected\)$/, output)
    assert_match(/^report lines in commit order, by slot and token: slot 0: 1x2 2x5; slot 1: 1x5 2x5$/, output)
    assert_match(/^refused: worker 7's line 3 with token 1 in slot 0 \(the fence had seen 2\); in the report: no$/,
                 output)
    assert_match(/^stale writes landed: 0; most jobs writing at once: 2; workers failed: 0$/, output)
    assert_match(/^VERDICT: safe\. Never more than 2 jobs wrote at once\. Worker 7's stale write was refused\.$/,
                 output)
  end

  # Without the fence, under a limit, worker 7's stale line lands in its successor's slot: three jobs wrote at once.
  def test_with_a_limit_and_without_the_fence_the_stale_write_lands_in_the_successors_slot
    output, status = Open3.capture2e(COMMAND, "--limit", "2", "--ttl", "0.6", "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/^report lines in commit order, by slot and token: slot 0: 1x2 2x5 1x\d+; slot 1: 1x5 2x5$/, output)
    assert_match(/^stale writes landed: 1; most jobs writing at once: [23]; workers failed: 0$/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  # --database PATH: the run uses and keeps that file (no temporary directory to remove), and a safe verdict exits 0.
  def test_a_database_path_is_used_and_kept_and_a_safe_run_exits_0
    database = File.join(scratch_dir("nightly-report-db"), "app.sqlite3")
    output, errors, status = Open3.capture3(COMMAND, "--ttl", "0.6", "--pause", "2", "--database", database)
    assert_equal [0, ""], [status.exitstatus, errors], output
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
    db = SQLite3::Database.new(database)
    assert_equal [[1, 2], [2, 5], [3, 5]], db.execute("SELECT token, COUNT(*) FROM report_lines GROUP BY token")
    assert_equal [[7, 1, 3]], db.execute("SELECT worker, token, line FROM refused_writes")
  ensure
    db&.close
  end

  # --postgres: the same story on a throwaway PostgreSQL server of its own under tmp/, removed after the run.
  def test_on_postgresql_the_stalled_jobs_late_write_is_refused_and_the_job_sees_lease_lost
    require_postgres!
    output, status = Open3.capture2e(COMMAND, "--postgres", "--workers", "3", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_match(%r{run\s+3 workers, .*; postgresql://postgres@127\.0\.0\.1:\d+/postgres \(a throwaway server\)$}, output)
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1$/, output)
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's [23]; line 3 rolled back$/, output)
    assert_match(/worker 7\s+LeaseLost \(lost\): stops without writing more$/, output)
    assert_match(/^report lines in commit order, by token: 1x2 2x5 3x5$/, output)
    assert_match(/^stale writes landed: 0; jobs interleaved: 0; workers failed: 0$/, output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
    assert_empty Dir[File.expand_path("../../tmp/nightly-report-*", __dir__)], "the throwaway server is gone"
  end

  def test_on_postgresql_with_a_limit_of_two_the_stalled_job_is_refused_in_its_slot
    require_postgres!
    assert_limited_story_on("--postgres")
  end

  # --mysql: the same story on a throwaway MariaDB server, the fence on ActiveRecord's mysql2 connection.
  def test_on_mysql_the_stalled_jobs_late_write_is_refused_and_the_job_sees_lease_lost
    require_mysql!
    output, status = Open3.capture2e(COMMAND, "--mysql", "--workers", "3", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_match(%r{run\s+3 workers, .*; mysql2://root@127\.0\.0\.1:\d+/lease_machines$}, output)
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's [23]; line 3 rolled back$/, output)
    assert_match(/^report lines in commit order, by token: 1x2 2x5 3x5$/, output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
    assert_empty Dir[File.expand_path("../../tmp/nightly-report-mysql-*", __dir__)], "the throwaway server is gone"
  end

  # Two jobs at once on MySQL: a renewal that waits for a job's fenced write in the same process must not stop the
  # process (see Store::MySQL's round trips).
  def test_on_mysql_with_a_limit_of_two_the_stalled_job_is_refused_in_its_slot
    require_mysql!
    assert_limited_story_on("--mysql")
  end

  # The story with --limit 2 on a throwaway server (+option+), safe.
  def assert_limited_story_on(option)
    output, status = Open3.capture2e(COMMAND, option, "--limit", "2", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_limited_story(output)
  end

  def test_on_mysql_without_the_fence_the_stale_write_lands
    require_mysql!
    output, status = Open3.capture2e(COMMAND, "--mysql", "--workers", "2", "--ttl", "0.6", "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  # --database postgresql://...: the user's database, kept; without the fence the stale line lands there.
  def test_on_a_postgresql_database_without_the_fence_the_stale_write_lands_and_is_kept
    url = fresh_postgres_database_url("lm_nightly")
    output, status = Open3.capture2e(COMMAND, "--workers", "2", "--ttl", "0.6", "--database", url, "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/worker 7\s+wrote line 3 with token 1$/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
    landed = PG.connect(url) { _1.exec("SELECT worker, token FROM report_lines WHERE line = 3 ORDER BY id").values }
    assert_equal [%w[7 1]], landed.select { _1.first == "7" }, "the stale line is in the kept database"
  end

  # Sidekiq: the stalled job's late ActiveRecord write is refused by the fence in SQLite, whose tokens the Redis store
  # issued; the other workers' retries went through Sidekiq's schedule.
  def test_on_sidekiq_with_the_leases_in_redis_the_stalled_jobs_late_write_is_refused
    require_sidekiq!
    output, status = Open3.capture2e(COMMAND, "--redis", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_match(%r{run\s+3 workers, .*; redis://127\.0\.0\.1:\d+ \(a throwaway redis-server, appendfsync always; },
                 output)
    assert_match(%r{; its fence: /\S+/app\.sqlite3\), Sidekiq 7\.\d+\.\d+$}, output)
    assert_refused_story(output)
    assert_match(/^VERDICT: safe\. Worker 7's stale write was refused\.$/, output)
    assert_empty Dir[File.expand_path("../../tmp/nightly-report-redis-*", __dir__)], "the throwaway server is gone"
  end

  def test_on_sidekiq_without_the_fence_the_stale_write_lands_and_the_verdict_fails
    require_sidekiq!
    output, status = Open3.capture2e(COMMAND, "--redis", "--workers", "2", "--ttl", "0.6", "--without-fence")
    assert_equal 1, status.exitstatus, output
    assert_match(/worker 7\s+wrote line 3 with token 1$/, output)
    assert_match(/^VERDICT: UNSAFE$/, output)
  end

  # Sidekiq jobs with their leases in Redis and their data in PostgreSQL, under a limit of two: the fence in the
  # job's own ActiveRecord transaction on PostgreSQL refuses worker 7 in its slot.
  def test_on_sidekiq_with_the_fence_in_postgresql_and_a_limit_the_stalled_job_is_refused_in_its_slot
    require_sidekiq!
    require_postgres!
    output, status = Open3.capture2e(COMMAND, "--redis", "--postgres", "--limit", "2", "--ttl", "0.6", "--pause", "2")
    assert status.success?, output
    assert_match(/its fence: postgresql:/, output)
    assert_limited_story(output)
  end

  def require_sidekiq!
    require_redis!
    require "sidekiq"
  rescue LoadError => e
    skip "Sidekiq is not installed for this Ruby: #{e.message}"
  end

  # A usage error is one line on stderr, nothing on stdout, and exit status 2 (1 is the unsafe verdict's).
  def test_usage_errors_are_one_line_on_stderr_and_exit_2
    {
      %w[--lines two] => "invalid argument: --lines two (must be a whole number from 3 to 20)",
      %w[--workers 9] => "invalid argument: --workers 9 (must be a whole number from 2 to 8)",
      %w[--limit 4] => "invalid argument: --limit 4 (must be a whole number from 1 to 3)",
      %w[--limit 2 --workers 2] => "--workers 2 must exceed --limit 2, or no job waits for a slot",
      %w[--ttl 1e-300] => "invalid argument: --ttl 1e-300 (must be a number of seconds from 0.1 to 5.0)",
      %w[--ttl 1e400] => "invalid argument: --ttl 1e400 (must be a number of seconds from 0.1 to 5.0)",
      %w[--ttl soon] => "invalid argument: --ttl soon (must be a number of seconds from 0.1 to 5.0)",
      %w[--pause 31] =>
        "invalid argument: --pause 31 (must be a number of seconds, more than the TTL and at most 30.0)",
      %w[--pause 0.5 --ttl 1] => "--pause 0.5 must exceed --ttl 1.0, or nothing happens",
      %w[--ttl] => "missing argument: --ttl",
      %w[--databse x.sqlite3] => "invalid option: --databse (did you mean --database?)",
      %w[--postgres --database x.sqlite3] => "--postgres takes a postgresql:// URL as --database, not \"x.sqlite3\"",
      %w[--version] => "invalid option: --version",
      %w[--workers 3 extra] => "unexpected argument \"extra\" (it takes options only)",
      %w[--redis 127.0.0.1:6379] => "--redis takes a redis:// URL, not \"127.0.0.1:6379\""
    }.then { assert_usage_errors(COMMAND, "nightly-report", _1) }
    output, errors, status = Open3.capture3(COMMAND, "--help")
    assert_equal [0, ""], [status.exitstatus, errors]
    assert_match(/\AUsage: bin\/nightly-report \[options\]$/, output)
    assert_match(/^Exit status: 0 safe, 1 unsafe, 2 inconclusive or a usage error\.$/, output)
    assert_match(/^\s+--postgres\s+on PostgreSQL/, output)
    assert_match(/^\s+--redis \[URL\]\s+the jobs on Sidekiq and the leases in Redis/, output)
  end
end
