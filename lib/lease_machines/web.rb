# frozen_string_literal: true

require "json"
require "rack"
require "securerandom"
require "lease_machines"
require "lease_machines/store"
require_relative "web/errors"
require_relative "web/configuration"
require_relative "web/stores"
require_relative "web/params"
require_relative "web/page_key"
require_relative "web/redaction"
require_relative "web/reply"
require_relative "web/router"
require_relative "web/action_guard"
require_relative "web/view"
require_relative "web/assets"
require_relative "web/layout"
require_relative "web/row"
require_relative "web/rows_table"
require_relative "web/resources_page"
require_relative "web/event_cells"
require_relative "web/notice"
require_relative "web/timeline"
require_relative "web/timeline_svg"
require_relative "web/resource_page"
require_relative "web/audit_page"
require_relative "web/prometheus"
require_relative "web/server"

module LeaseMachines
  # A lease dashboard, as a plain Rack application (require "lease_machines/web"; it needs the rack gem, which the
  # gem itself does not depend on). Server-rendered HTML, a small script under a nonce-based Content-Security-Policy,
  # and nothing else:
  #
  #   GET  /                 the resources: holder, token, fence high-water, state, time left (?prefix= ?after= ?limit=)
  #   GET  /resources.json   the same rows as JSON (what the page polls every poll_every seconds)
  #   GET  /resource         one resource's timeline and newest events (?name= ?slot= ?limit=; ?after= pages forward)
  #   GET  /resource.json    the same events and its slots as JSON (what the page polls)
  #   GET  /resource.svg     its timeline alone
  #   GET  /audit            Store#audit's findings
  #   GET  /metrics          Prometheus text format 0.0.4
  #   POST /revoke           ends a live lease (Store#revoke), with actions: true only
  #
  # Standalone (config.ru: +run LeaseMachines::Web.new(store: -> { LeaseMachines::Store.new("leases.sqlite3") })+),
  # or mounted in Rails by the class itself, which serves the class-level configuration:
  #
  #   LeaseMachines::Web.configure do |config|
  #     config.actions = true
  #     config.authorize = ->(request) { request.env["warden"]&.user&.admin? }
  #   end
  #   mount LeaseMachines::Web => "/leases"                   # config/routes.rb
  #
  # Read-only unless +actions+ is true; an action is refused unless it is a POST from the dashboard's own origin
  # that the +authorize+ hook allows. The hook, when there is one, is asked about every request, the pages' too: lease
  # holders and resource names are the application's business. Bad parameters are a 400 with a plain message, an unknown path a 404, a store
  # that cannot answer (StoreError) a 503 with its message, any other failure a 500 naming only the exception's class
  # (its message and backtrace go to the server's log, rack.errors); never a backtrace on the page.
  class Web
    UNCONFIGURED = "LeaseMachines::Web has no store to read: configure one, as in LeaseMachines::Web.configure " \
                   "{ |config| config.store = -> { LeaseMachines::Store.new(\"db/leases.sqlite3\") } } (a factory: " \
                   "one store per server thread), or load lease_machines/jobs in a Rails application, whose lease " \
                   "store is then the default"
    LOCK = Thread::Mutex.new
    private_constant :LOCK

    class << self
      # The class-level Configuration, which LeaseMachines::Web itself serves with (as a Rack app, +mount
      # LeaseMachines::Web => "/leases"+).
      def configuration = LOCK.synchronize { @configuration ||= Configuration.new }

      # Yields the class-level configuration, checks it (ArgumentError for actions without an authorize hook) and
      # returns it; the app built from the previous one is closed, the next request builds it anew.
      def configure
        configuration = self.configuration
        yield configuration
        configuration.check!
        drop_app
        configuration
      end

      # The class as a Rack app: the dashboard of the class-level configuration, built at the first request. Without
      # a store there (and no default, see default_store), every request is a 500 saying how to configure one.
      def call(env)
        app = self.app
        return app.call(env) if app

        Reply.new(head: env["REQUEST_METHOD"] == "HEAD").error(NotConfigured.new(UNCONFIGURED))
      end

      # The dashboard the class serves (a Web), nil while there is no store to build it on.
      def app
        configuration = self.configuration
        LOCK.synchronize do
          source = configuration.store || default_store
          @app ||= source && new(store: source, actions: configuration.actions, authorize: configuration.authorize,
                                 expiring_within: configuration.expiring_within, poll_every: configuration.poll_every)
        end
      end

      # The store the class-level dashboard reads when none is configured: in an application that loaded
      # lease_machines/jobs, the jobs' own (LeaseMachines::Jobs.pool, when LeaseMachines::Jobs.store is set, as the
      # Railtie sets it), else in Rails the application's database (Railtie::APPLICATION_DATABASE); nil otherwise.
      def default_store
        return nil unless defined?(Jobs.configuration)
        return Jobs.pool unless Jobs.store.nil?

        defined?(Railtie::APPLICATION_DATABASE) ? Railtie::APPLICATION_DATABASE : nil
      end

      # Forgets the class-level configuration and closes the stores of the app built from it (for tests, and for a
      # process that configures the dashboard anew).
      def reset
        drop_app
        LOCK.synchronize { @configuration = nil }
      end

      private

      def drop_app
        app = LOCK.synchronize { @app.tap { @app = nil } }
        app&.close
      end
    end

    # A dashboard on +store+: a LeaseMachines::Store (requests take it one at a time, behind a Mutex), a factory of
    # them (anything with +call+: one Store per server thread) or LeaseMachines::Jobs.pool. +actions+ (true or false)
    # offers revoke; +authorize+ (nil, or anything with +call+, given each request's Rack::Request; falsy refuses it
    # with 403) gates every page and action. +expiring_within+ (Float seconds, 0 to 1e9) is when a live lease shows
    # as expiring; +poll_every+ (Float seconds, 0.1 to 86400) how often the pages ask for fresh rows. Raises
    # TypeError or ArgumentError for a value it cannot use, and ArgumentError for actions without authorize.
    def initialize(store:, actions: false, authorize: nil, expiring_within: 5.0, poll_every: 2.0)
      if nil.equal?(store)
        raise TypeError, "store must be a LeaseMachines::Store or a factory of them (anything with call), got nil"
      end

      settings = Configuration.new
      settings.store = store
      settings.actions = actions
      settings.authorize = authorize
      settings.expiring_within = expiring_within
      settings.poll_every = poll_every
      settings.check!
      @actions = settings.actions
      @authorize = settings.authorize
      @expiring_within = settings.expiring_within
      @poll_every = settings.poll_every
      @stores = Stores.new(store)
      @guard = ActionGuard.new(@actions)
    end

    attr_reader :actions, :expiring_within, :poll_every

    # The Rack interface: +env+ in, [status, headers, body] out. Whatever goes wrong is answered, not raised: an
    # exception other than an HttpError or a StoreError is a 500 (Failed), written with its backtrace to
    # env["rack.errors"], the server's log.
    def call(env)
      reply = Reply.new(head: env["REQUEST_METHOD"] == "HEAD")
      request = Rack::Request.new(env)
      page = Router.route(request)
      authorize!(request)
      __send__(page, request, reply)
    rescue HttpError => e
      reply.error(e)
    rescue StoreError => e
      reply.error(Unavailable.new(Redaction.mask(e.message)))
    rescue StandardError => e
      failed(env, e)
      reply.error(Failed.new(e))
    end

    # Closes the stores a factory opened for this dashboard (a Store it was given is its owner's to close).
    def close = @stores.close

    private

    # Writes +error+ with its backtrace (and its causes') to the server's log, env["rack.errors"], with any password
    # masked (Redaction), should a connection string be in a message.
    def failed(env, error)
      log = env["rack.errors"] or return
      where = "#{env["REQUEST_METHOD"]} #{env["SCRIPT_NAME"]}#{env["PATH_INFO"]}"
      log.write(Redaction.mask("LeaseMachines::Web: #{where} failed: #{error.full_message(highlight: false)}"))
      log.flush
    end

    def authorize!(request)
      return if @authorize.nil? || @authorize.call(request)

      raise Forbidden, "not authorized: the dashboard's authorize hook refused this request"
    end

    def index(request, reply) = reply.html(page(ResourcesPage, request).html(view(request, reply)))
    def resources_json(request, reply) = reply.json(page(ResourcesPage, request).json)
    def resource(request, reply) = reply.html(page(ResourcePage, request).html(view(request, reply)))
    def resource_json(request, reply) = reply.json(page(ResourcePage, request).json)
    def resource_svg(request, reply) = reply.svg(page(ResourcePage, request).svg(view(request, reply)))
    def audit(request, reply) = reply.html(read(AuditPage.new).html(view(request, reply)))
    def metrics(_request, reply) = reply.prometheus(read(Prometheus.new(@expiring_within)).to_s)

    # A page of +kind+ on +request+'s parameters, read.
    def page(kind, request) = read(kind.new(Params.new(request), @expiring_within))

    # POST /revoke (resource=NAME, slot=N, default 0, token=T, the token the page showed; without it whichever lease
    # is live): Store#revoke, then 303 to the resource's page, whose notice says what happened. With a token, a lease
    # that moved on since the page was rendered is left alone. Never deletes a row.
    def revoke(request, reply)
      @guard.check!(request)
      params = Params.new(request, form: true)
      resource = params.resource("resource")
      slot = params.slot("slot", default: 0)
      token = params.integer("token", 1..Store::MAX_TOKEN)
      decision = stored { |store| store.revoke(resource: resource, slot: slot, token: token) }
      reply.redirect(view(request, reply).url("/resource", name: resource, **Notice.params(decision, slot, token)))
    end

    # +page+ read from this request's store (Page#read); returns the page.
    def read(page) = stored { |store| page.read(store) }

    # Yields the request's store. A name the store refuses (ArgumentError: a NUL byte on PostgreSQL, or on Redis with
    # a PostgreSQL fence, say) is the request's fault: 400.
    def stored(&)
      @stores.with(&)
    rescue ArgumentError => e
      raise BadRequest, e.message
    end

    def view(request, reply)
      View.new(base: request.script_name, nonce: reply.nonce, poll_every: @poll_every, actions: @actions)
    end
  end
end
