# frozen_string_literal: true

require_relative "support/web_support"

# Safe by default: read-only unless actions are on; the one action, revoke, only as a POST from the dashboard's own
# origin that the authorize hook allows; a nonce-based Content-Security-Policy and the other headers on every answer;
# nothing secret on screen.
class SecurityTest < Minitest::Test
  include LeaseMachines::WebSupport

  ALLOW_ALL = ->(_request) { true }
  SAME_ORIGIN = { "HTTP_SEC_FETCH_SITE" => "same-origin", "HTTP_ORIGIN" => "http://example.org" }.freeze
  ROUTES = ["/", "/resources.json", "/resource?name=r", "/resource.json?name=r", "/resource.svg?name=r", "/audit",
            "/metrics", "/nowhere", "/?limit=0"].freeze

  def actions_on = @options = { actions: true, authorize: ALLOW_ALL }

  # The lease of "r" live at the store's clock (nil when none is), read from the store itself.
  def live_lease(resource = "r") = @store.resources(prefix: resource).find { _1.resource == resource }&.lease_at(@time)

  def revoke(params = { resource: "r", slot: "0" }, env = SAME_ORIGIN) = post("/revoke", params, env)

  def test_every_answer_carries_the_policy_and_the_headers
    grant("r", 7)
    ROUTES.each do |path|
      get path
      headers = last_response.headers
      policy_nonce
      assert_equal ["nosniff", "same-origin", "no-store"],
                   headers.values_at("x-content-type-options", "referrer-policy", "cache-control"), path
    end
    revoke
    assert_equal 403, status
    policy_nonce
  end

  def test_the_pages_style_and_script_carry_the_policys_fresh_nonce
    grant("r", 7)
    seen = %w[/ /resource?name=r /audit].map do |path|
      get path
      nonce = policy_nonce
      assert_equal [nonce], attributes("script", "nonce"), path
      assert_equal [nonce], attributes("style", "nonce"), path
      refute_match(/\son[a-z]+=/i, body, "no inline event handler: the policy would block it")
      refute_match(/\sstyle=/i, body, "no inline style attribute: the policy would block it")
      nonce
    end
    get "/"
    seen << policy_nonce
    assert_equal seen.size, seen.uniq.size, "a fresh nonce for every response"
  end

  def test_get_never_changes_anything
    actions_on
    grant("r", 7)
    %w[GET HEAD].each do |method|
      request "/revoke?resource=r&slot=0", method: method
      assert_equal 405, status, method
      assert_equal "POST", last_response.headers["allow"]
    end
    assert_equal "405 Method Not Allowed: GET is not allowed here (allowed: POST)\n", (get("/revoke") && body)
    assert_equal 7, live_lease.owner, "still held"
    refute_includes @store.events(resource: "r").map(&:kind), :revoked
  end

  def test_the_pages_take_get_and_head_only
    post "/", {}, SAME_ORIGIN
    assert_equal [405, "GET, HEAD"], [status, last_response.headers["allow"]]
    head "/"
    assert_equal [200, ""], [status, body]
  end

  def test_a_cross_site_post_is_refused
    actions_on
    grant("r", 7)
    {
      { "HTTP_SEC_FETCH_SITE" => "cross-site" } => "cross-site request refused: Sec-Fetch-Site is \"cross-site\", not same-origin",
      { "HTTP_SEC_FETCH_SITE" => "same-site" } => "cross-site request refused: Sec-Fetch-Site is \"same-site\", not same-origin",
      { "HTTP_ORIGIN" => "http://evil.example" } => "cross-origin request refused: Origin \"http://evil.example\" is " \
                                                   "not this dashboard's (http://example.org)",
      { "HTTP_ORIGIN" => "null" } => "cross-origin request refused: Origin \"null\" is not this dashboard's (http://example.org)",
      { "HTTP_ORIGIN" => "https://example.org" } => "cross-origin request refused: Origin \"https://example.org\" is " \
                                                   "not this dashboard's (http://example.org)",
      { "HTTP_SEC_FETCH_SITE" => "same-origin", "HTTP_ORIGIN" => "http://example.org:8080" } =>
        "cross-origin request refused: Origin \"http://example.org:8080\" is not this dashboard's (http://example.org)"
    }.each do |env, message|
      revoke({ resource: "r", slot: "0" }, env)
      assert_equal [403, "403 Forbidden: #{message}\n"], [status, body], env.inspect
    end
    assert_equal 7, live_lease.owner
  end

  def test_the_origin_check_takes_the_default_port_and_case_as_the_same_origin
    actions_on
    grant("r", 7)
    revoke({ resource: "r" }, "HTTP_ORIGIN" => "HTTP://Example.org:80", "HTTP_SEC_FETCH_SITE" => "none")
    assert_equal 303, status, body
    assert_nil live_lease
  end

  def test_a_post_the_authorize_hook_refuses_is_refused
    asked = []
    @options = { actions: true, authorize: ->(request) { asked << [request.class, request.path_info]; false } }
    grant("r", 7)
    revoke
    assert_equal [403, "403 Forbidden: not authorized: the dashboard's authorize hook refused this request\n"],
                 [status, body]
    assert_equal 7, live_lease.owner
    get "/"
    assert_equal 403, status, "the hook guards the pages too"
    assert_equal [[Rack::Request, "/revoke"], [Rack::Request, "/"]], asked
  end

  # The page's markup, without its script (which can build a Revoke form, when the table says actions are on).
  def markup = body.sub(%r{<script nonce="[^"]*">.*</script>}m, "")

  def test_actions_off_offer_no_button_and_refuse_the_post
    grant("r", 7)
    get "/"
    refute_includes markup, "Revoke"
    refute_includes markup, %(method="post")
    assert_includes markup, %(data-actions="false")
    assert_includes markup, "read-only"
    get "/resource?name=r"
    refute_includes markup, "Revoke"
    revoke
    assert_equal 403, status
    assert_match(/\A403 Forbidden: actions are off: this dashboard is read-only/, body)
    assert_equal 7, live_lease.owner
  end

  def test_actions_need_an_authorize_hook
    error = assert_raises(ArgumentError) { LeaseMachines::Web.new(store: @store, actions: true) }
    assert_match(/\Aactions need an authorize hook: pass authorize:/, error.message)
  end

  def test_a_revoke_ends_the_live_lease_fences_its_token_and_deletes_nothing
    actions_on
    grant("r", 7)
    get "/"
    forms = body.scan(%r{<form class="revoke" method="post" action="/revoke">(.*?)</form>}m).flatten
    assert_equal 1, forms.size
    fields = forms.first.scan(/name="(\w+)" value="([^"]*)"/).to_h
    assert_equal({ "resource" => "r", "slot" => "0", "token" => "1" }, fields)

    revoke(fields)
    assert_equal 303, status
    assert_equal "/resource?name=r&revoked=0&token=1", last_response.headers["location"]
    assert_nil live_lease
    assert_equal 1, @store.resource_count, "the row stays"
    assert_equal %i[acquired revoked], @store.events(resource: "r").map(&:kind)
    error = assert_raises(LeaseMachines::Fenced) { @store.fenced(resource: "r", token: 1, now: @time) { flunk } }
    assert_equal :not_held, error.reason

    get last_response.headers["location"]
    assert_includes body, %(<p class="flash" role="status">Revoked the lease of slot 0; token 1 is fenced from now on.</p>)
  end

  def test_a_revoke_of_a_lease_that_moved_on_changes_nothing
    actions_on
    grant("r", 7, ttl: 5.0)
    @time += 10
    grant("r", 9) # token 2, after the page showed token 1
    revoke(resource: "r", slot: "0", token: "1")
    assert_equal "/resource?name=r&refused=0&reason=stale_token", last_response.headers["location"]
    assert_equal [9, 2], [live_lease.owner, live_lease.token]
    get last_response.headers["location"]
    assert_includes body, "Slot 0 was not revoked: its lease had moved on to a newer token than the one shown. " \
                          "Nothing changed."
    revoke(resource: "never", slot: "0")
    assert_equal "/resource?name=never&refused=0&reason=not_held", last_response.headers["location"]
  end

  def test_a_revoke_of_a_hostile_name_round_trips
    actions_on
    HOSTILE.each do |name|
      grant(name, 7)
      revoke(resource: name, slot: "0")
      assert_equal 303, status, name
      path, query = last_response.headers["location"].split("?", 2)
      assert_equal ["/resource", name], [path, Rack::Utils.parse_query(query)["name"]]
      assert_nil live_lease(name)
    end
  end

  def test_the_notice_shows_only_its_own_words
    get "/resource?name=r&refused=0&reason=%3Cscript%3E"
    assert_includes body, "Slot 0 was not revoked: the store refused (). Nothing changed."
    refute_includes body, "&lt;script"
    get "/resource?name=r&revoked=0&token=x"
    assert_equal [400, "400 Bad Request: token must be an integer from 1 to 9223372036854775807, got \"x\"\n"], [status, body]
  end

  def test_json_escapes_markup
    grant("</script><script>alert(1)</script>", 7)
    get "/resources.json"
    assert_includes body, %("resource":"<\\/script><script>alert(1)<\\/script>")
    assert_equal "</script><script>alert(1)</script>", json[:rows].first[:resource]
  end

  # Store#path never carries a password; should one ever, the page masks it (and a store's message likewise).
  def test_no_password_reaches_the_screen
    grant("r", 7)
    answering(@store, :path, "postgres://app:hunter2@db/leases") { get "/" }
    refute_includes body, "hunter2"
    assert_includes body, "Database: <code>postgres://app:***@db/leases</code>"
  end

  def test_a_store_error_is_a_503_with_its_message_masked
    failing = -> { raise LeaseMachines::StoreError, "cannot reach postgresql://app:hunter2@db/leases: timeout" }
    @app = Rack::Lint.new(LeaseMachines::Web.new(store: failing))
    get "/"
    assert_equal [503, "503 Service Unavailable: cannot reach postgresql://app:***@db/leases: timeout\n"], [status, body]
  end

  def test_redaction_masks_passwords_in_urls_and_keywords
    {
      "postgres://user:secret@host/db" => "postgres://user:***@host/db",
      "postgresql://u:p%40ss@h:5432/d?sslmode=require" => "postgresql://u:***@h:5432/d?sslmode=require",
      "host=db password=secret dbname=x" => "host=db password=*** dbname=x",
      "password='a b\\' c' user=x" => "password=*** user=x",
      "postgresql://u@h/d?password=secret&user=u" => "postgresql://u@h/d?password=***&user=u",
      "/var/lib/leases.sqlite3" => "/var/lib/leases.sqlite3"
    }.each { |text, shown| assert_equal shown, LeaseMachines::Web::Redaction.mask(text), text }
  end
end
