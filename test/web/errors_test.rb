# frozen_string_literal: true

require_relative "support/web_support"
require "stringio"

# What a bad request gets: a 400 (or 404, 405) with one plain line saying what was wrong, and a store that cannot
# answer a 503 with its message; never a backtrace, and every answer still carries the dashboard's headers.
class ErrorsTest < Minitest::Test
  include LeaseMachines::WebSupport

  BAD = {
    "/?limit=0" => "limit must be an integer from 1 to 500, got \"0\"",
    "/?limit=501" => "limit must be an integer from 1 to 500, got \"501\"",
    "/?limit=ten" => "limit must be an integer from 1 to 500, got \"ten\"",
    "/?limit=1.5" => "limit must be an integer from 1 to 500, got \"1.5\"",
    "/?limit=-1" => "limit must be an integer from 1 to 500, got \"-1\"",
    "/?limit=99999999999999999999999" => "limit must be an integer from 1 to 500, got \"99999999999999999999999\"",
    "/resources.json?limit=+5" => "limit must be an integer from 1 to 500, got \" 5\"",
    "/?limit[]=5" => "limit must be given once, as name=value, got [\"5\"]",
    "/?prefix=a&prefix=b" => "the parameter \"prefix\" is given 2 times: give it once",
    "/resource?name=r&name=s&name=r" => "the parameter \"name\" is given 3 times: give it once",
    "/resource.json?name=r&slot=0&sl%6Ft=1" => "the parameter \"slot\" is given 2 times: give it once",
    "/?limit[]=5&limit[]=6" => "the parameter \"limit[]\" is given 2 times: give it once",
    "/?after=garbage" => "after must be the key of a row, SLOT:RESOURCE (as the Next link writes it), got \"garbage\"",
    "/?after=1024:x" => "after must be the key of a row, SLOT:RESOURCE (as the Next link writes it), got \"1024:x\"",
    "/?after=0:" => "after must be the key of a row, SLOT:RESOURCE (as the Next link writes it), got \"0:\"",
    "/?after=01:x" => "after must be the key of a row, SLOT:RESOURCE (as the Next link writes it), got \"01:x\"",
    "/?prefix=%FF" => "the parameter \"prefix\" is not valid UTF-8",
    "/?%FE=1" => "the parameter \"\\xFE\" is not valid UTF-8",
    "/resource" => "name is required: the resource's name",
    "/resource?name=" => "name is required: the resource's name",
    "/resource?name=r&slot=x" => "slot must be an integer from 0 to 1023, got \"x\"",
    "/resource?name=r&slot=1024" => "slot must be an integer from 0 to 1023, got \"1024\"",
    "/resource.json?name=r&after=-1" => "after must be an integer from 0 to 9223372036854775807, got \"-1\"",
    "/resource.svg?name=r&limit=1001" => "limit must be an integer from 1 to 1000, got \"1001\"",
    "/resource?name=#{"x" * 1025}" => "name must be at most 1024 bytes, got 1025",
    "/resource?name=%C3%A9&revoked=slot" => "revoked must be an integer from 0 to 1023, got \"slot\""
  }.freeze

  # The answer is one plain line, with the dashboard's headers.
  def assert_plain(code, message, what)
    assert_equal [code, "text/plain; charset=utf-8"], [status, last_response.headers["content-type"]], what
    reason = Rack::Utils::HTTP_STATUS_CODES.fetch(code)
    assert_equal "#{code} #{reason}: #{message}\n", body, what
    assert_equal "nosniff", last_response.headers["x-content-type-options"]
    policy_nonce
  end

  def test_bad_parameters_are_a_400_saying_what_was_wrong
    BAD.each do |path, message|
      get path
      assert_plain 400, message, path
    end
  end

  def test_a_query_rack_cannot_read_is_a_400
    get "/", {}, "QUERY_STRING" => "prefix=%"
    assert_plain 400, "the query cannot be read: invalid %-encoding (%)", "a stray %"
    get "/", {}, "QUERY_STRING" => "prefix=%FF%"
    assert_plain 400, "the query cannot be read: invalid %-encoding (%FF%)", "as Rack quotes it"
  end

  def test_an_unknown_path_is_a_404
    { "/nowhere" => "no page at \"/nowhere\"", "/resource/x" => "no page at \"/resource/x\"",
      "/.." => "no page at \"/..\"" }.each do |path, message|
      get path
      assert_plain 404, message, path
    end
    get "/audit/"
    assert_equal 200, status, "a trailing slash is the same page"
  end

  def test_a_bad_form_is_a_400
    @options = { actions: true, authorize: ->(_request) { true } }
    post "/revoke", { resource: "r", slot: "one" }, "HTTP_SEC_FETCH_SITE" => "same-origin"
    assert_plain 400, "slot must be an integer from 0 to 1023, got \"one\"", "slot"
    post "/revoke", { slot: "0" }, "HTTP_SEC_FETCH_SITE" => "same-origin"
    assert_plain 400, "resource is required: the resource's name", "resource"
    post "/revoke", { resource: "r", token: "0" }, "HTTP_SEC_FETCH_SITE" => "same-origin"
    assert_plain 400, "token must be an integer from 1 to 9223372036854775807, got \"0\"", "token"
    post "/revoke", "resource=r&slot=0&resource=s", "HTTP_SEC_FETCH_SITE" => "same-origin",
                                                    "CONTENT_TYPE" => "application/x-www-form-urlencoded"
    assert_plain 400, "the parameter \"resource\" is given 2 times: give it once", "twice in the form"
    post "/revoke?resource=s", { resource: "r" }, "HTTP_SEC_FETCH_SITE" => "same-origin"
    assert_plain 400, "the parameter \"resource\" is given 2 times: give it once", "in the query and the form"
  end

  def test_a_store_that_cannot_open_is_a_503_with_its_message
    file = File.join(scratch_dir("lm-web-broken"), "a-file")
    File.write(file, "")
    @app = Rack::Lint.new(@web = LeaseMachines::Web.new(store: -> { LeaseMachines::Store.new(File.join(file, "x.sqlite3")) }))
    %w[/ /resources.json /resource?name=r /audit /metrics].each do |path|
      get path
      assert_equal 503, status, path
      assert_match(%r{\A503 Service Unavailable: cannot open the lease store at .*/a-file/x\.sqlite3: .+\n\z}, body)
    end
  end

  # Any other exception is a 500 that names its class alone; its message and backtrace are in the server's log
  # (rack.errors), never on the page.
  def test_an_unexpected_exception_is_a_500_and_goes_to_the_log
    grant("r", 1)
    @store.define_singleton_method(:events) { |**| raise NoMethodError, "undefined method 'secret_detail' for nil" }
    log = StringIO.new
    get "/resource?name=r&after=0", {}, "rack.errors" => log
    assert_plain 500, "the dashboard failed (NoMethodError); see the server's log", "a failing page"
    refute_includes body, "secret_detail"
    assert_match %r{\ALeaseMachines::Web: GET /resource failed: .*undefined method 'secret_detail' for nil \(NoMethodError\)\n},
                 log.string
    assert_match %r{^\tfrom .*/lib/lease_machines/web/resource_page\.rb:\d+:in }, log.string, "the backtrace"
    head "/resource?name=r&after=0", {}, "rack.errors" => StringIO.new
    assert_equal [500, ""], [status, body]
  end

  def test_a_factory_that_opens_no_store_is_a_500_saying_so_in_the_log
    log = StringIO.new
    @app = Rack::Lint.new(LeaseMachines::Web.new(store: -> { :not_a_store }))
    get "/", {}, "rack.errors" => log
    assert_plain 500, "the dashboard failed (TypeError); see the server's log", "a factory of something else"
    assert_includes log.string,
                    "the dashboard's store factory returned :not_a_store, not a LeaseMachines::Store (TypeError)"
  end

  def test_a_raising_authorize_hook_is_a_500
    @options = { authorize: ->(_request) { raise KeyError, "no session" } }
    log = StringIO.new
    get "/", {}, "rack.errors" => log
    assert_plain 500, "the dashboard failed (KeyError); see the server's log", "the hook raised"
    assert_includes log.string, "no session (KeyError)"
  end
end
