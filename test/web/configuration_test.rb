# frozen_string_literal: true

require_relative "support/web_support"

# How a dashboard gets its store and options: Web.new's keywords, or the class-level configuration that the class
# itself serves (mount LeaseMachines::Web => "/leases"), with the Rails application's store as the default; each
# option checked as it is set.
class ConfigurationTest < Minitest::Test
  include LeaseMachines::WebSupport

  Web = LeaseMachines::Web if LEASE_MACHINES_WEB # else every test skips (WebSupport#setup)

  def teardown
    Web.reset
    super
  end

  # Rack::Test against the class itself, as Rails mounts it.
  def app = Rack::Lint.new(Web)

  def test_the_class_serves_its_configuration
    grant("r", 7)
    path = @path
    configured = Web.configure do |config|
      config.store = -> { LeaseMachines::Store.new(path, clock: -> { @time }) }
      config.actions = true
      config.authorize = ->(request) { request.get_header("HTTP_X_ADMIN") == "yes" }
      config.expiring_within = 120
      config.poll_every = 5
    end
    assert_same Web.configuration, configured
    assert_equal [true, 120.0, 5.0], [configured.actions, configured.expiring_within, configured.poll_every]

    get "/", {}, "HTTP_X_ADMIN" => "yes"
    assert_equal 200, status
    assert_equal "expiring", table_rows.first[6], "60 s left, under the configured 120"
    assert_includes body, %(data-poll-every="5.0")
    assert_includes body, %(<form class="revoke")
    get "/"
    assert_equal 403, status, "the configured hook"
    post "/revoke", { resource: "r", slot: "0" }, "HTTP_X_ADMIN" => "yes", "HTTP_SEC_FETCH_SITE" => "same-origin"
    assert_equal 303, status
    assert_nil @store.resources.first.lease_at(@time)
  end

  def test_a_store_given_as_is_is_opened_again_in_a_forked_server_process
    plain_suite_only!("a forked child process")
    grant("nightly-report", 7)
    dashboard = Rack::Lint.new(Web.new(store: @store))
    get = -> { Rack::MockRequest.new(dashboard).get("/metrics").body[/^lease_machines_resources \d+$/] }
    assert_equal "lease_machines_resources 1", get.call # opened in this process first, as a preforking server does
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.puts get.call
    rescue StandardError => e
      writer.puts "#{e.class}: #{e.message}"
    ensure
      exit!(0)
    end
    writer.close
    Process.wait(pid)
    assert_equal "lease_machines_resources 1\n", reader.read, "the child read through a connection of its own"
    assert_equal "lease_machines_resources 1", get.call, "and the parent's still works"
  ensure
    reader&.close
  end

  def test_configure_again_rebuilds_the_app
    path = @path
    Web.configure { |config| config.store = -> { LeaseMachines::Store.new(path) } }
    first = Web.app
    assert_same first, Web.app
    Web.configure { |config| config.poll_every = 10.0 }
    refute_same first, Web.app
    assert_equal 10.0, Web.app.poll_every
  end

  def test_without_a_store_the_class_says_how_to_configure_one
    answering(Web, :default_store, nil) do
      get "/"
      assert_equal 500, status
      assert_equal "500 Internal Server Error: #{Web::UNCONFIGURED}\n", body
      assert_includes body, "LeaseMachines::Web.configure { |config| config.store = -> { LeaseMachines::Store.new("
      refute_match(/\.rb:\d+/, body, "no backtrace")
      policy_nonce
    end
  end

  def test_actions_without_an_authorize_hook_are_refused_at_configure
    error = assert_raises(ArgumentError) { Web.configure { |config| config.actions = true } }
    assert_match(/\Aactions need an authorize hook/, error.message)
  end

  def test_in_an_application_with_jobs_the_default_is_the_jobs_store
    begin
      require "lease_machines/jobs"
    rescue LoadError
      skip "ActiveJob is not installed for this Ruby"
    end
    grant("from-the-jobs", 7)
    path = @path
    previous = LeaseMachines::Jobs.store
    LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(path, clock: -> { @time }) }
    begin
      assert_same LeaseMachines::Jobs.pool, Web.default_store
      get "/"
      assert_equal 200, status
      assert_equal ["from-the-jobs"], table_rows.map { _1[1] }
    ensure
      LeaseMachines::Jobs.store = previous
    end
  end

  STORE_MESSAGE = "store must be a LeaseMachines::Store or a factory of them (anything with call), got"
  REFUSED = [
    [:store=, "leases.db", TypeError, "#{STORE_MESSAGE} \"leases.db\""],
    [:store=, BasicObject.new, TypeError, "#{STORE_MESSAGE} BasicObject"],
    [:actions=, "yes", TypeError, "actions must be true or false, got \"yes\""],
    [:actions=, nil, TypeError, "actions must be true or false, got nil"],
    [:authorize=, :admin, TypeError, "authorize must respond to call (it is given the Rack::Request), got :admin"],
    [:expiring_within=, "5", TypeError, "expiring_within must be Float seconds, got \"5\""],
    [:expiring_within=, -1.0, ArgumentError, "expiring_within must be from 0.0 to 1000000000.0 seconds, got -1.0"],
    [:expiring_within=, Float::NAN, ArgumentError, "expiring_within must be from 0.0 to 1000000000.0 seconds, got NaN"],
    [:poll_every=, 0, ArgumentError, "poll_every must be from 0.1 to 86400.0 seconds, got 0"],
    [:poll_every=, Float::INFINITY, ArgumentError, "poll_every must be from 0.1 to 86400.0 seconds, got Infinity"]
  ].freeze

  def test_each_option_is_checked_as_it_is_set
    ill_typed!
    config = Web::Configuration.new
    REFUSED.each do |setter, value, error_class, message|
      error = assert_raises(error_class, setter) { config.public_send(setter, value) }
      assert_equal message, error.message
    end
    assert_equal [nil, false, nil, 5.0, 2.0], [config.store, config.actions, config.authorize, config.expiring_within,
                                               config.poll_every], "nothing refused was kept"
    config.expiring_within = 0
    assert_equal 0.0, config.expiring_within
  end

  def test_new_checks_its_keywords
    ill_typed!
    error = assert_raises(TypeError) { Web.new(store: nil) }
    assert_equal "store must be a LeaseMachines::Store or a factory of them (anything with call), got nil", error.message
    assert_raises(ArgumentError) { Web.new(store: @store, poll_every: 0.0) }
    assert_raises(TypeError) { Web.new(store: @store, authorize: true) }
    web = Web.new(store: @store)
    assert_equal [false, 5.0, 2.0], [web.actions, web.expiring_within, web.poll_every]
  end

  # A factory's store is the thread's own: each server thread opens one at its first request and keeps it; a
  # finished thread's is closed when the next one opens, the rest by Web#close.
  def test_a_factory_opens_one_store_per_thread
    grant("r", 7)
    opened = []
    path = @path
    web = Web.new(store: -> { LeaseMachines::Store.new(path).tap { opened << _1 } })
    request = -> { Rack::MockRequest.new(web).get("/resources.json").status }
    assert_equal [200, 200], [request.call, request.call]
    assert_equal 1, opened.size, "the same thread, the same store"
    assert_equal [200, 200], Array.new(2) { Thread.new { request.call } }.map(&:value)
    assert_equal 3, opened.size
    Thread.new { request.call }.join
    assert_equal 4, opened.size
    closed = opened.map { _1.database.closed? }
    assert_equal [false, true, true, false], closed, "the finished threads' stores were closed at the next opening"
    web.close
    assert opened.all? { _1.database.closed? }
  end

  # A Store is one connection: the requests of many threads take it one at a time.
  def test_a_store_is_shared_by_threads_one_request_at_a_time
    20.times { grant("r#{_1}", 7) }
    web = Web.new(store: @store)
    statuses = Array.new(8) do
      Thread.new { Array.new(10) { Rack::MockRequest.new(web).get("/resources.json?limit=5").status } }
    end.flat_map(&:value)
    assert_equal [200] * 80, statuses
  end
end
