# frozen_string_literal: true

require "test_helper"

# Runs every ```ruby block of README.md, in order, in one binding (later blocks may use what earlier ones defined),
# and checks each line annotated `expression # => expected` against the value the expression really has.
class ReadmeTest < Minitest::Test
  README = File.expand_path("../../README.md", __dir__)
  RAILS = SQLITE3 && begin
    require "active_record"
    require "active_job"
    true
  rescue LoadError
    false
  end

  Block = Struct.new(:source, :line)

  def self.blocks
    blocks = []
    current = nil
    File.foreach(README).with_index(1) do |text, number|
      if current.nil? && text.start_with?("```ruby")
        current = Block.new(+"", number + 1)
      elsif current && text.start_with?("```")
        blocks << current
        current = nil
      elsif current
        current.source << text
      end
    end
    blocks
  end

  # Rewrites `expr # => expected` lines into checks; everything else runs as written.
  def self.instrument(block)
    block.source.lines.map.with_index do |text, offset|
      code, expected = text.split(/\s# => /, 2)
      next text unless expected

      %(__readme_check((#{code.strip}), #{expected.strip.dump}, #{block.line + offset})\n)
    end.join
  end

  # A URL of a fresh schema on the suite's PostgreSQL cluster, or nil where there is none.
  def postgres_schema_url
    return nil unless PostgresCluster.available? && SQLITE3

    require "pg"
    cluster = LeaseMachines::TestSupport.postgres
    schema = "readme_#{Process.pid}_#{rand(1 << 30)}"
    PG.connect(cluster.url).then { |admin| admin.exec("CREATE SCHEMA #{schema}").then { admin.close } }
    "#{cluster.url}?options=-csearch_path%3D#{schema}"
  end

  # The URL of a throwaway redis-server that syncs every write (appendfsync always), stopped after the test; nil where
  # there is no redis-server or redis-client gem.
  def redis_url
    require_relative "../../examples/support/redis_server"
    require "redis-client"
    @redis = RedisServer.new(File.join(LeaseMachines::TestSupport::TMP, "readme-redis-#{Process.pid}"),
                             args: %w[--appendonly yes --appendfsync always]).start
    @redis.url
  rescue LoadError, RedisServer::Error
    nil
  end

  # The URL of a fresh database on the suite's MariaDB server, or nil where there is none.
  def mysql_url
    return nil unless MySQLServer.available? && SQLITE3

    LeaseMachines::TestSupport.mysql.fresh_database_url("readme")
  end

  def teardown
    @redis&.destroy
    super
  end

  def test_the_readme_has_ruby_examples
    assert_operator self.class.blocks.size, :>=, 10
  end

  def test_every_ruby_example_in_the_readme_runs_and_shows_the_true_result
    checks = []
    # A binding at the top level, as a script has: the classes an example defines are top-level constants, named as
    # an application names them ("NightlyReportJob", not "ReadmeTest::NightlyReportJob").
    scope = TOPLEVEL_BINDING.eval("Object.new.instance_eval { binding }")
    context = scope.receiver
    context.define_singleton_method(:__readme_check) do |actual, expected, line|
      checks << [actual, expected, line]
      actual
    end
    database_url = postgres_schema_url
    ENV["LEASE_MACHINES_DATABASE_URL"] = database_url
    ENV["LEASE_MACHINES_REDIS_URL"] = redis = redis_url
    ENV["LEASE_MACHINES_MYSQL_URL"] = mysql = mysql_url
    self.class.blocks.each do |block|
      # The PostgreSQL store's example needs a server and the pg gem (the suite's throwaway cluster).
      next if database_url.nil? && block.source.include?("LEASE_MACHINES_DATABASE_URL")
      # The MySQL store's example needs a MariaDB server and the mysql2 gem (the suite's throwaway server).
      next if mysql.nil? && block.source.include?("LEASE_MACHINES_MYSQL_URL")
      # The Redis store's example needs a redis-server and the redis-client gem.
      next if redis.nil? && block.source.include?("LEASE_MACHINES_REDIS_URL")
      # The SQLite store's example needs the sqlite3 gem, which the gem does not depend on.
      next if !SQLITE3 && block.source.match?(%r{lease_machines/store|LeaseMachines::Store\b})
      # The Rails jobs example needs ActiveJob and ActiveRecord, development dependencies of the gem.
      next if !RAILS && block.source.match?(%r{lease_machines/jobs|ActiveJob|holds_lease})
      # The continuable job's example needs Rails 8.1's ActiveJob::Continuable (the Rails 7.2 lane has none).
      next if block.source.include?("ActiveJob::Continuable") && !defined?(ActiveJob::Continuable)

      scope.eval(self.class.instrument(block), README, block.line)
    end

    assert_operator checks.size, :>=, 40 + (database_url ? 5 : 0) + (redis ? 6 : 0) + (mysql ? 4 : 0),
                    "the README's annotated lines all ran"
    checks.each do |actual, expected, line|
      want = eval(expected, binding, README, line) # rubocop:disable Security/Eval
      message = "README.md:#{line}: expected #{expected}, got #{actual.inspect}"
      want.nil? ? assert_nil(actual, message) : assert_equal(want, actual, message)
    end
  end
end
