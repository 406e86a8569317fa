/** The caller's teams: what `team_id` may name when a collection is created (the dashboard's team choice). */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { COMMON_ERRORS, Envelope } from "./schemas.ts";

export const Team = Type.Object({
  id: Type.Integer({ description: "What `team_id` names when a collection is created.", examples: [1] }),
  name: Type.String({ examples: ["default"] }),
  default: Type.Boolean({
    description: "The team a collection goes to when it is created without `team_id`.",
  }),
});

export const teamRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/",
    {
      schema: {
        tags: ["Teams"],
        summary: "List the teams you are a member of",
        description:
          "Your teams, by id, with the one collections go to by default marked. Creating a collection with a `team_id` not listed here is refused with 403.",
        response: { 200: Envelope(Type.Array(Team)), ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const { principal } = request;
      const teams = await app.services.accounts.teamsOf(principal.userId);
      // Without a default team of their own, collections go to the first team (see chooseTeam).
      const fallback = principal.defaultTeamId ?? teams[0]?.id;
      return {
        success: true as const,
        message: "success" as const,
        result: teams.map((team) => ({ id: team.id, name: team.name, default: team.id === fallback })),
      };
    },
  );
};
