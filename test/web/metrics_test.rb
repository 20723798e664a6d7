# frozen_string_literal: true

require_relative "support/web_support"

# /metrics in the Prometheus text exposition format 0.0.4, read back by a parser of the format's grammar: every line a
# HELP, a TYPE or a sample, every metric with one HELP and one TYPE before its samples, label values escaped.
class MetricsTest < Minitest::Test
  include LeaseMachines::WebSupport

  NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/
  LABEL = /[a-zA-Z_][a-zA-Z0-9_]*="(?:\\[\\"n]|[^"\\\n])*"/
  VALUE = /[+-]?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf)|NaN/
  SAMPLE = /\A(#{NAME})(?:\{(#{LABEL}(?:,#{LABEL})*)?,?\})? (#{VALUE})(?: -?\d+)?\z/
  TYPES = %w[counter gauge histogram summary untyped].freeze

  # The exposition +text+ as { name => { help:, type:, samples: { labels (Hash) => value (Float) } } }; a line the
  # grammar does not allow, a metric without HELP or TYPE, a second HELP or TYPE, or a sample before them fails.
  def parse(text)
    assert text.end_with?("\n"), "the exposition ends with a newline"
    metrics = Hash.new { |hash, name| hash[name] = { samples: {} } }
    text.each_line(chomp: true) do |line|
      case line
      when /\A# HELP (#{NAME}) ((?:\\[\\n]|[^\\])*)\z/
        refute metrics[$1].key?(:help), "a second HELP for #{$1}"
        metrics[$1][:help] = $2
      when /\A# TYPE (#{NAME}) (\w+)\z/
        refute metrics[$1].key?(:type), "a second TYPE for #{$1}"
        assert_includes TYPES, $2
        metrics[$1][:type] = $2
      when SAMPLE
        name, labels, value = $1, $2, $3
        assert metrics.key?(name) && metrics[name][:help] && metrics[name][:type], "#{name}: HELP and TYPE first"
        pairs = (labels || "").scan(/([a-zA-Z_]\w*)="((?:\\[\\"n]|[^"\\])*)"/)
        labels = pairs.to_h { |key, escaped| [key, escaped.gsub(/\\([\\"n])/) { $1 == "n" ? "\n" : $1 }] }
        metrics[name][:samples][labels] = Float(value.sub("Inf", "Infinity"))
      else
        flunk "not a line of the exposition format: #{line.inspect}"
      end
    end
    metrics.each { |name, metric| assert metric[:help] && metric[:type], "#{name} has HELP and TYPE" }
    metrics
  end

  def value(metrics, name, labels = {}) = metrics.fetch(name)[:samples].fetch(labels)

  def test_the_figures_of_a_real_store
    worker_sevens_night("nightly-report")
    grant("expiring", 3, ttl: 2.0)
    grant("lapsed", 4, ttl: 1.0)
    @store.acquire(resource: "pool", owner: 1, ttl: 60.0, now: @time, limit: 2)
    @time += 1.0

    get "/metrics"
    assert_equal 200, status
    assert_equal "text/plain; version=0.0.4; charset=utf-8", last_response.headers["content-type"]
    metrics = parse(body)
    assert_equal %w[lease_machines_resources lease_machines_leases_held lease_machines_leases_expiring
                    lease_machines_leases_held_complete lease_machines_events lease_machines_store_time_seconds
                    lease_machines_scrape_duration_seconds], metrics.keys
    assert_equal "gauge", metrics["lease_machines_events"][:type]
    assert_equal "Events the store's event log keeps now, by kind (retention prunes them).",
                 metrics["lease_machines_events"][:help]
    assert_equal 4.0, value(metrics, "lease_machines_resources")
    assert_equal [3.0, 1.0, 1.0], %w[held expiring held_complete].map { value(metrics, "lease_machines_leases_#{_1}") },
                 "nightly-report (6 s left) and pool held, expiring (1 s left) expiring, lapsed free"
    counts = @store.event_counts
    assert_equal counts.keys.map { { "kind" => _1.to_s } }, metrics["lease_machines_events"][:samples].keys
    counts.each { |kind, count| assert_equal count.to_f, value(metrics, "lease_machines_events", "kind" => kind.to_s) }
    assert_equal [37.0, 2.0, 1.0], %i[acquired write_accepted write_refused].map { counts[_1].to_f }
    assert_equal @time, value(metrics, "lease_machines_store_time_seconds")
    assert_includes 0.0..5.0, value(metrics, "lease_machines_scrape_duration_seconds")
  end

  # The events are those the log keeps now: retention prunes the oldest, so a kind's count falls (a gauge; a counter
  # that fell would read to Prometheus as a restart).
  def test_the_event_counts_fall_as_retention_prunes
    @store.close
    @store = LeaseMachines::Store.new(@path, clock: -> { @time }, keep_events: 2)
    lease = grant("r", 1)
    get "/metrics"
    assert_equal 1.0, value(parse(body), "lease_machines_events", "kind" => "acquired")
    2.times { |i| @store.renew(resource: "r", owner: 1, token: lease.token, ttl: 60.0, now: @time + i + 1) }
    get "/metrics"
    metrics = parse(body)
    assert_equal [0.0, 2.0], %w[acquired renewed].map { value(metrics, "lease_machines_events", "kind" => _1) }
  end

  # A scrape never runs the audit (it loads every change the log keeps); its findings are the /audit page's.
  def test_a_scrape_reads_no_audit_and_the_audit_page_shows_a_finding
    worker_sevens_night("r")
    renewed = @store.events(resource: "r", limit: 1000).find { _1.kind == :renewed }
    SQLite3::Database.new(@path) do |db|
      db.execute("UPDATE lease_machines_events SET expires_at = 1.0 WHERE id = ?", [renewed.id])
    end
    audit = @store.method(:audit)
    @store.define_singleton_method(:audit) { raise "a scrape ran Store#audit" }
    get "/metrics"
    assert_equal 200, status, body
    refute_match(/audit/, body)
    @store.define_singleton_method(:audit, audit)
    get "/audit"
    assert_includes body, %(<p class="invalid">1 finding, )
    assert_includes body, %(<td><a href="/resource?name=r&amp;after=#{renewed.id - 1}">#{renewed.id}</a></td>)
  end

  # The live leases are counted page by page, up to the bound; past it the count says it is not complete.
  def test_the_live_count_pages_and_stops_at_its_bound
    5.times { grant("r#{_1}", 1) }
    {
      { scan: 10, page: 2 } => [5.0, 1.0], { scan: 5, page: 2 } => [5.0, 1.0], { scan: 4, page: 2 } => [4.0, 0.0],
      { scan: 3, page: 1000 } => [3.0, 0.0]
    }.each do |options, (held, complete)|
      text = LeaseMachines::Web::Prometheus.new(5.0, **options).read(@store).to_s
      metrics = parse(text)
      assert_equal [held, complete], [value(metrics, "lease_machines_leases_held"),
                                      value(metrics, "lease_machines_leases_held_complete")], options.inspect
    end
  end

  def test_label_values_are_escaped_as_the_format_says
    assert_equal 'a\\\\b\\"c\\nd', LeaseMachines::Web::Prometheus.label("a\\b\"c\nd")
    line = %(x{kind="#{LeaseMachines::Web::Prometheus.label("a\\b\"c\nd")}"} 1)
    assert_match SAMPLE, line
    assert_equal({ { "kind" => "a\\b\"c\nd" } => 1.0 },
                 parse("# HELP x x\n# TYPE x gauge\n#{line}\n")["x"][:samples])
    assert_equal %w[+Inf -Inf NaN 1.5 3], [Float::INFINITY, -Float::INFINITY, Float::NAN, 1.5, 3].map {
      LeaseMachines::Web::Prometheus.number(_1)
    }
  end

  def test_the_parser_refuses_what_the_format_does_not_allow
    [["x 1\n", "HELP and TYPE first"], ["# HELP x x\n# TYPE x gauge\nx{a=\"b} 1\n", "not a line"],
     ["# HELP x x\n# TYPE x gauge\nx one\n", "not a line"], ["# HELP x x\n# TYPE x gauge\n# TYPE x gauge\n", "second"],
     ["# HELP x x\n# TYPE x meter\n", "meter"]].each do |text, message|
      error = assert_raises(Minitest::Assertion) { parse(text) }
      assert_includes error.message, message
    end
  end
end
