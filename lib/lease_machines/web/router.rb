# frozen_string_literal: true

module LeaseMachines
  class Web
    # The dashboard's routes (paths below its mount point) and the methods each takes: the pages answer GET and HEAD,
    # the one action POST only. Anything else is a NotFound or a MethodNotAllowed (with the Allow header's methods).
    module Router
      READ = %w[GET HEAD].freeze
      ACT = %w[POST].freeze
      ROUTES = {
        "/" => [:index, READ],
        "/resources.json" => [:resources_json, READ],
        "/resource" => [:resource, READ],
        "/resource.json" => [:resource_json, READ],
        "/resource.svg" => [:resource_svg, READ],
        "/audit" => [:audit, READ],
        "/metrics" => [:metrics, READ],
        "/revoke" => [:revoke, ACT]
      }.freeze

      # The name of the page +request+ (a Rack::Request) asks for. A trailing slash is ignored (/audit/ is /audit;
      # the mount point itself, with or without one, is /).
      def self.route(request)
        path = request.path_info
        path = path.chomp("/") if path.length > 1
        path = "/" if path.empty?
        name, methods = ROUTES[path]
        raise NotFound, "no page at #{LeaseMachines.shown(path)}" unless name
        raise MethodNotAllowed.new(request.request_method, methods) unless methods.include?(request.request_method)

        name
      end
    end
  end
end
