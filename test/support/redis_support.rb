# frozen_string_literal: true

require_relative "../../examples/support/redis_server"

# Throwaway redis-servers (examples/support/redis_server.rb) in the checkout's tmp/: one shared by the tests of this
# process (flushed before each), and servers of a test's own (other options, or to be killed), stopped and removed in
# its teardown. A test skips, saying why, where there is no redis-server or no redis-client gem.
module RedisStoreSupport
  def self.unavailable_reason
    return @unavailable_reason if defined?(@unavailable_reason)

    @unavailable_reason = begin
      require "redis-client"
      RedisServer.new(File.join(LeaseMachines::TestSupport::TMP, "redis-probe-#{Process.pid}")).start.destroy
      nil
    rescue LoadError, RedisServer::Error => e
      e.message
    end
  end

  def self.shared
    @shared ||= begin
      server = RedisServer.new(File.join(LeaseMachines::TestSupport::TMP, "redis-#{Process.pid}")).start
      owner = Process.pid
      at_exit { server.destroy if Process.pid == owner }
      server
    end
  end

  def require_redis!
    reason = RedisStoreSupport.unavailable_reason
    skip "Redis unavailable: #{reason}" if reason
    requires_sqlite3! # the fences of these tests are SQLite files
  end

  # The shared server's URL, every key and script of earlier tests gone.
  def fresh_redis_url
    require_redis!
    server = RedisStoreSupport.shared
    server.client.then { |client| client.call("FLUSHALL") && client.call("SCRIPT", "FLUSH") && client.close }
    server.url
  end

  # A server of this test's own, with redis-server's +args+; stopped and removed after the test.
  def own_redis(*args)
    require_redis!
    @servers ||= []
    dir = File.join(LeaseMachines::TestSupport::TMP, "redis-#{Process.pid}-#{@servers.size}-#{SecureRandom.hex(3)}")
    RedisServer.new(dir, args: args).start.tap { @servers << _1 }
  end

  def teardown
    super
    (@clients || []).each(&:close)
    (@servers || []).each(&:destroy)
  end

  def redis(url = @url) = (@clients ||= []).push(RedisClient.new(url: url)).last
end
